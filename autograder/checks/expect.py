"""What the hidden checks call to compare a student's result with the expected one.

A failure raises ``CheckFailure`` with a message that says what was checked, what was found
against what was expected (shape, dtype, size of the largest error, never the values) and,
when the result matches a known-wrong variant, the likely cause.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from autograder.checks.mistakes import SENTENCES, name_mistake


CAUSE = "Likely cause: "


class CheckFailure(AssertionError):
    """The student's result is wrong; the message is the feedback, ``mistake`` the named mistake's key, if any,
    ``evidence`` where the result first differs (index, expected, got, error, allowed, shape), if known."""

    def __init__(self, message: str, mistake: str | None = None, evidence: dict | None = None) -> None:
        super().__init__(message)
        self.mistake = mistake
        self.evidence = evidence or {}


def fail(message: str, mistake: str | None = None, *, hint: str | None = None, evidence: dict | None = None) -> None:
    """Fail the check. ``mistake`` is a key of ``mistakes.SENTENCES`` (a named mistake, kept as a field
    for the class summary); ``hint`` is a cause in free words, shown but not counted."""
    cause = SENTENCES[mistake] if mistake else hint
    raise CheckFailure(f"{message}. {CAUSE}{cause}." if cause else f"{message}.", mistake, evidence)


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def expect_tensor(
    actual,
    expected: Tensor,
    *,
    what: str,
    tolerance: tuple[float, float],
    variants: dict[str, Tensor] | None = None,
    dtype: torch.dtype | None = None,
) -> None:
    """``actual`` has the expected shape and dtype and is within tolerance of ``expected``."""
    if not isinstance(actual, Tensor):
        fail(f"{what}: expected a tensor, got {type(actual).__name__}")
    atol, rtol = tolerance
    variants = variants or {}
    if tuple(actual.shape) != tuple(expected.shape):
        fail(
            f"{what}: shape {tuple(actual.shape)}, expected {tuple(expected.shape)}",
            name_mistake(actual, variants, atol, rtol),
        )
    want = dtype or expected.dtype
    if actual.dtype != want:
        fail(f"{what}: dtype {dtype_name(actual.dtype)}, expected {dtype_name(want)} (keep the input's dtype)")
    if actual.dtype == torch.bool:
        differ = actual != expected
        if differ.any():
            evidence = _first_difference(differ, actual, expected, None)
            fail(f"{what}: {int(differ.sum())} of {actual.numel()} entries differ; {_where(evidence)}",
                 name_mistake(actual, variants, 0, 0), evidence=evidence)
        return
    found, wanted = actual.double(), expected.double()
    bad = found.isnan() | found.isinf()
    if (bad & wanted.isfinite()).any():
        kind = "NaN" if found.isnan().any() else "inf"
        evidence = _first_difference(bad & wanted.isfinite(), found, wanted, None)
        fail(f"{what}: contains {kind} where finite values were expected; {_where(evidence)}",
             name_mistake(actual, variants, atol, rtol), evidence=evidence)
    error = (found - wanted).abs().nan_to_num(0.0)
    allowed = atol + rtol * wanted.abs().nan_to_num(0.0)
    if (error > allowed).any():
        worst = float(error.max())
        evidence = _first_difference(error > allowed, found, wanted, allowed)
        mistake = name_mistake(actual, variants, atol, rtol)
        fail(
            f"{what}: values differ from the expected ones by up to {worst:.3g}"
            f" (allowed: {atol:g} + {rtol:g}*|expected|); {_where(evidence)}",
            mistake, hint=None if mistake else precision_loss(worst, wanted, actual.dtype), evidence=evidence,
        )


def matches(got, expected, tolerance) -> bool:
    """Same shape and, within tolerance, the same values (bool tensors: equal)."""
    if not (isinstance(got, torch.Tensor) and isinstance(expected, torch.Tensor)) or got.shape != expected.shape:
        return False
    if got.dtype == torch.bool or expected.dtype == torch.bool:
        return bool((got == expected).all())
    try:
        expect_tensor(got, expected, what="", tolerance=tolerance, dtype=got.dtype)
    except CheckFailure:
        return False
    return True


def _first_difference(differ: Tensor, found: Tensor, wanted: Tensor, allowed: Tensor | None) -> dict:
    """Where the result first differs (row-major order): one entry, never the whole tensor or the inputs."""
    index = tuple(int(i) for i in differ.nonzero()[0])
    got, want = found[index].item(), wanted[index].item()
    # NaN and inf as text: results.json must stay strict JSON
    evidence = {"shape": list(found.shape), "index": list(index), "expected": _plain(want), "got": _plain(got)}
    if allowed is not None:
        evidence |= {"error": abs(got - want), "allowed": float(allowed[index])}
    return evidence


def _plain(value):
    return value if isinstance(value, bool) or math.isfinite(value) else str(value)


def _where(evidence: dict) -> str:
    """One line for the message: 'first at index (i, j) of shape (m, n): expected x, got y (error e, allowed a)'."""
    index, shape = tuple(evidence["index"]), tuple(evidence["shape"])
    text = f"first at index {index} of shape {shape}: expected {_number(evidence['expected'])}, got {_number(evidence['got'])}"
    if "error" in evidence:
        text += f" (error {evidence['error']:.3g}, allowed {evidence['allowed']:.3g})"
    return text


def _number(value) -> str:
    return str(value) if isinstance(value, (bool, str)) else f"{value:.6g}"


# rounding of a narrower float type: an error within this many of its epsilons (relative) is that rounding
PRECISION_EPSILONS = 10
NARROWER = {torch.float64: (torch.float32, torch.float16), torch.float32: (torch.float16,)}


def precision_loss(worst: float, wanted: Tensor, dtype: torch.dtype) -> str | None:
    """Name precision loss when the largest error is at a narrower dtype's rounding level; else None."""
    relative = worst / max(float(wanted.abs().nan_to_num(0.0).max()), 1.0)
    for narrow in NARROWER.get(dtype, ()):
        if relative <= PRECISION_EPSILONS * torch.finfo(narrow).eps:
            return (f"precision loss: errors of this size (relative {relative:.1g}) are {dtype_name(narrow)} rounding,"
                    f" so the math looks right but part of it runs in {dtype_name(narrow)} or coarser;"
                    f" compute in the input's dtype ({dtype_name(dtype)})")
    return None
