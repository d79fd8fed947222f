"""What the hidden checks call to compare a student's result with the expected one.

A failure raises ``CheckFailure`` with a message that says what was checked, what was found
against what was expected (shape, dtype, size of the largest error, never the values) and,
when the result matches a known-wrong variant, the likely cause.
"""

from __future__ import annotations

import torch
from torch import Tensor

from autograder.checks.mistakes import SENTENCES, name_mistake


class CheckFailure(AssertionError):
    """The student's result is wrong; the message is the feedback, ``mistake`` the named mistake's key, if any."""

    def __init__(self, message: str, mistake: str | None = None) -> None:
        super().__init__(message)
        self.mistake = mistake


def fail(message: str, mistake: str | None = None, *, hint: str | None = None) -> None:
    """Fail the check. ``mistake`` is a key of ``mistakes.SENTENCES`` (a named mistake, kept as a field
    for the class summary); ``hint`` is a cause in free words, shown but not counted."""
    cause = SENTENCES[mistake] if mistake else hint
    raise CheckFailure(f"{message}. Likely cause: {cause}." if cause else f"{message}.", mistake)


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
        wrong = int((actual != expected).sum())
        if wrong:
            fail(f"{what}: {wrong} of {actual.numel()} entries differ", name_mistake(actual, variants, 0, 0))
        return
    found, wanted = actual.double(), expected.double()
    bad = found.isnan() | found.isinf()
    if (bad & wanted.isfinite()).any():
        kind = "NaN" if found.isnan().any() else "inf"
        fail(f"{what}: contains {kind} where finite values were expected", name_mistake(actual, variants, atol, rtol))
    error = (found - wanted).abs().nan_to_num(0.0)
    allowed = atol + rtol * wanted.abs().nan_to_num(0.0)
    if (error > allowed).any():
        worst = float(error.max())
        fail(
            f"{what}: values differ from the expected ones by up to {worst:.3g}"
            f" (allowed: {atol:g} + {rtol:g}*|expected|)",
            name_mistake(actual, variants, atol, rtol),
        )
