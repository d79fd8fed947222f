"""What the hidden checks call to compare a student's result with the expected one.

A failure raises ``CheckFailure`` with a message that says what was checked and what was found
against what was expected (shape, dtype, size of the largest error, never the values) and, as
fields, the likely cause (a known-wrong variant the result matches, or a hint) and the evidence.
The words around the cause ("Likely cause: ") are written at the edge (autograder/render/text.py).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable

import torch
from torch import Tensor

from autograder.checks.mistakes import SENTENCES, close, name_mistake


class CheckFailure(AssertionError):
    """The student's result is wrong: ``what`` was found (the message is that sentence), ``mistake`` the named
    mistake's key, if any, ``cause`` the likely cause in words (the mistake's sentence, or a hint), if any,
    ``evidence`` where the result first differs (index, expected, got, error, allowed, shape), if known,
    ``builds_on`` the student's functions this failure is explained by, with evidence (checks/substitution.py):
    with them fixed, the result is right. ``guessed``: the cause is a guess from the error's size (precision loss),
    which a cause shown by evidence (a function it builds on, recomputed) replaces."""

    def __init__(
        self,
        what: str,
        mistake: str | None = None,
        evidence: dict | None = None,
        cause: str | None = None,
        builds_on: tuple[str, ...] = (),
        guessed: bool = False,
    ) -> None:
        super().__init__(f"{what}.")
        self.what = what
        self.mistake = mistake
        self.cause = cause or ""
        self.evidence = evidence or {}
        self.builds_on = tuple(builds_on)
        self.guessed = guessed  # the cause is read from the error's size alone (precision loss), not shown by a rerun

    @property
    def message(self) -> str:
        return f"{self.what}."


def fail(
    message: str,
    mistake: str | None = None,
    *,
    hint: str | None = None,
    evidence: dict | None = None,
    builds_on: tuple[str, ...] = (),
    guessed: bool = False,
) -> None:
    """Fail the check. ``mistake`` is a key of ``mistakes.SENTENCES`` (a named mistake, kept as a field
    for the class summary); ``hint`` is a cause in free words, shown but not counted; ``builds_on`` the
    student's functions whose fix makes this result right (found with evidence: checks/substitution.py).

    >>> try:
    ...     fail("sliding_window_mask(4, 2): a query sees a later key", hint="keep j <= i, as causal_mask does")
    ... except CheckFailure as failure:
    ...     print(failure.message, "|", failure.cause)
    sliding_window_mask(4, 2): a query sees a later key. | keep j <= i, as causal_mask does
    """
    raise CheckFailure(message, mistake, evidence, SENTENCES[mistake] if mistake else hint, builds_on, guessed)


@contextlib.contextmanager
def edge_case():
    """A case on an edge shape (a batch of one, a single key, d_k = 1...): a failure raised in it is marked ``edge``,
    so that it charges its own check and leaves the function's gates to their measures (scoring.not_yet_implemented)."""
    try:
        yield
    except Exception as error:
        error.edge = True
        raise


class Cases:
    """A check's cases, each run ``with cases:``: a failure that builds on other functions (``builds_on``) is
    held while the check's other cases run, so that the check fails with a cause of its own if any case has
    one; ``cases.done()`` at the end raises the first held failure, naming every function the held ones
    build on (their union). Scoring decides what such a failure costs (``[scoring] borrowed``)."""

    def __init__(self) -> None:
        self.held: CheckFailure | None = None
        self.functions: list[str] = []

    def __enter__(self) -> Cases:
        return self

    def __exit__(self, kind, error, traceback) -> bool:
        if not (isinstance(error, CheckFailure) and error.builds_on):
            return False
        self.held = self.held or error
        self.functions += [name for name in error.builds_on if name not in self.functions]
        return True

    def done(self) -> None:
        if self.held is not None:
            held = self.held
            raise CheckFailure(held.what, held.mistake, held.evidence, held.cause, tuple(self.functions), held.guessed)


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def expect_tensor(
    actual,
    expected: Tensor,
    *,
    what: str,
    tolerance: tuple[float, float],
    variants: dict[str, Tensor] | Callable[[], dict[str, Tensor]] | None = None,
    dtype: torch.dtype | None = None,
    scale: float = 0.0,
) -> None:
    """``actual`` has the expected shape and dtype and is within tolerance of ``expected``.

    ``scale`` is the size of the numbers ``expected`` was computed from (what ``Settings.tolerance``
    was given): precision loss is named by the error relative to it (see ``precision_loss``).

    Silent when right; otherwise the check fails (``CheckFailure``) with a sentence naming what differs and where it
    first differs; a result that matches one of ``variants`` (a key of ``mistakes.SENTENCES`` -> the wrong result
    it gives) names that mistake. ``variants`` may be a function that makes them: it is called only when the result
    is wrong (the blockwise part's variants each run the online softmax over every block):

    >>> scores = torch.tensor([[2.0, 4.0]])
    >>> expect_tensor(scores / 2, scores / 2, what="scale_scores", tolerance=(1e-6, 0))
    >>> try:
    ...     expect_tensor(scores / 4, scores / 2, what="scale_scores", tolerance=(1e-6, 0),
    ...                   variants={"divide_by_dk": scores / 4})
    ... except CheckFailure as failure:
    ...     print(failure.what.split(";")[0], "|", failure.mistake)
    scale_scores: values differ from the expected ones by up to 1 (allowed: 1e-06 + 0*|expected|) | divide_by_dk
    """
    if not isinstance(actual, Tensor):
        fail(f"{what}: expected a tensor, got {type(actual).__name__}")
    atol, rtol = tolerance
    made = variants if callable(variants) else lambda: variants or {}
    if tuple(actual.shape) != tuple(expected.shape):
        fail(
            f"{what}: shape {tuple(actual.shape)}, expected {tuple(expected.shape)}",
            name_mistake(actual, made(), atol, rtol),
        )
    want = dtype or expected.dtype
    if actual.dtype != want:
        fail(f"{what}: dtype {dtype_name(actual.dtype)}, expected {dtype_name(want)} (keep the input's dtype)")
    if actual.dtype == torch.bool:
        differ = actual != expected
        if differ.any():
            evidence = _first_difference(differ, actual, expected, None)
            fail(
                f"{what}: {int(differ.sum())} of {actual.numel()} entries differ; {_where(evidence)}",
                name_mistake(actual, made(), 0, 0),
                evidence=evidence,
            )
        return
    found, wanted = actual.double(), expected.double()
    bad = found.isnan() | found.isinf()
    if (bad & wanted.isfinite()).any():
        kind = "NaN" if found.isnan().any() else "inf"
        evidence = _first_difference(bad & wanted.isfinite(), found, wanted, None)
        fail(
            f"{what}: contains {kind} where finite values were expected; {_where(evidence)}",
            name_mistake(actual, made(), atol, rtol),
            evidence=evidence,
        )
    error = (found - wanted).abs().nan_to_num(0.0)
    allowed = allowance(wanted, tolerance)
    if (error > allowed).any():
        worst = float(error.max())
        evidence = _first_difference(error > allowed, found, wanted, allowed)
        mistake = name_mistake(actual, made(), atol, rtol)
        fail(
            f"{what}: values differ from the expected ones by up to {worst:.3g}"
            f" (allowed: {atol:g} + {rtol:g}*|expected|); {_where(evidence)}",
            mistake,
            hint=None if mistake else precision_loss(worst, wanted, actual.dtype, scale),
            evidence=evidence,
            guessed=not mistake,
        )


def allowance(expected: Tensor, tolerance: tuple[float, float]) -> Tensor:
    """The largest error a check allows at each entry: atol + rtol * |expected| (the one rule; pictures use it too)."""
    atol, rtol = tolerance
    return atol + rtol * expected.double().abs().nan_to_num(0.0)


def matches(got, expected, tolerance) -> bool:
    """Same shape and, within tolerance, the same values (bool tensors: equal): for a check that decides itself.

    >>> matches(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0 + 1e-9]), (1e-6, 1e-6))
    True
    >>> matches(torch.tensor([1.0, 2.0]), torch.tensor([1.0]), (1e-6, 1e-6))
    False
    """
    if not (isinstance(got, torch.Tensor) and isinstance(expected, torch.Tensor)) or got.shape != expected.shape:
        return False
    if got.dtype == torch.bool or expected.dtype == torch.bool:
        return bool((got == expected).all())
    try:
        expect_tensor(got, expected, what="", tolerance=tolerance, dtype=got.dtype)
    except CheckFailure:
        return False
    return True


def reproduces(got, recomputed, tolerance) -> bool:
    """``recomputed`` is ``got``, right or wrong: tensors of one shape and dtype, NaN where NaN, within tolerance
    elsewhere."""
    if not (isinstance(got, Tensor) and isinstance(recomputed, Tensor)) or got.shape != recomputed.shape:
        return False
    if got.dtype != recomputed.dtype:
        return False
    if got.dtype == torch.bool or recomputed.dtype == torch.bool:
        return bool((got == recomputed).all())
    return close(got.double(), recomputed.double(), *tolerance)


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
    text = (
        f"first at index {index} of shape {shape}: "
        f"expected {_number(evidence['expected'])}, got {_number(evidence['got'])}"
    )
    if "error" in evidence:
        text += f" (error {evidence['error']:.3g}, allowed {evidence['allowed']:.3g})"
    return text


def _number(value) -> str:
    return str(value) if isinstance(value, (bool, str)) else f"{value:.6g}"


def magnitude(*tensors: Tensor) -> float:
    """The largest finite |entry| of the tensors: the size of the numbers a result is computed from."""
    sizes = [float(t.detach().double().abs().nan_to_num(0.0, posinf=0.0).max()) for t in tensors if t.numel()]
    return max(sizes, default=0.0)


def attention_size(Q: Tensor, K: Tensor, V: Tensor) -> float:
    """The size of the numbers attention's results come from: the largest |q . k| / sqrt(d_k) the softmax
    can see (sum of |q_i k_i|), times the largest |value| the weights mix (at least 1)."""
    scores = magnitude(Q.double().abs() @ K.double().abs().transpose(-2, -1)) / math.sqrt(Q.size(-1))
    return scores * max(1.0, magnitude(V))


# rounding of a narrower float type: an error within this many of its epsilons (relative) is that rounding
PRECISION_EPSILONS = 10
NARROWER = {
    torch.float64: (torch.float32, torch.float16, torch.bfloat16),
    torch.float32: (torch.float16, torch.bfloat16),
    torch.float16: (torch.bfloat16,),
}


def precision_loss(worst: float, wanted: Tensor, dtype: torch.dtype, scale: float = 0.0) -> str | None:
    """Name precision loss when the largest error is a narrower dtype's rounding; else None.

    The dtype named is the widest narrower one whose rounding, at the size of the numbers the result
    comes from (``scale``), reaches the error: weights of a softmax over scores of size 1e4 that err by
    4e-4 are float32 rounding (4e-8 of 1e4), never float16. It is named only when the error is within
    that dtype's rounding of the result's own size too: an error of 10% is not rounding, whatever the scale.
    """
    size = max(float(wanted.abs().nan_to_num(0.0).max()) if wanted.numel() else 0.0, 1.0)
    for narrow in NARROWER.get(dtype, ()):
        bound = PRECISION_EPSILONS * torch.finfo(narrow).eps
        if worst <= bound * max(size, scale):  # the widest dtype whose rounding at the inputs' size explains it
            if worst > bound * size:
                return None
            return (
                f"precision loss: errors of this size (relative {worst / size:.1g}) are {dtype_name(narrow)} rounding"
                f" of numbers this size, so the math looks right but part of it runs in {dtype_name(narrow)};"
                f" compute in the input's dtype ({dtype_name(dtype)}) or float32"
            )
    return None
