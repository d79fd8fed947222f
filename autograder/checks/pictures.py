"""A tiny public example's attention weights, expected beside the student's, for a failed check.

When a check about masks, the causal triangle, the softmax or the attention weights fails, the
feedback shows what the student's function does to a fixed, public, tiny input (a few queries
and keys, drawn from a constant seed): the expected weights, computed here by the reference,
beside the student's, computed through the proxy. Nothing of the hidden inputs is used or shown.

This module only computes numbers (a plain dict, kept in the results as a field); the block
grid and the images are drawn from that dict at the edge (``autograder.render``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from autograder.checks.expect import allowance, magnitude
from autograder.checks.student import Student, StudentFault
from reference import attention as ref

if TYPE_CHECKING:
    from autograder.config import Tolerance

SEED = 16  # public: the tiny example is the same for everyone, and may be shown
D_K = 4


@dataclass(frozen=True)
class Example:
    """A tiny input: scores (1, T_q, T_k), the Q, K, V behind them, and the mask that is meant (or None)."""

    name: str
    Q: Tensor
    K: Tensor
    V: Tensor
    mask: Tensor | None  # (T_q, T_k), True = may attend; None: no mask
    lengths: Tensor | None = None  # (1, T_q): the padding example's per-query lengths
    is_causal: bool = False

    @property
    def scores(self) -> Tensor:
        return ref.scale_scores(ref.attention_scores(self.Q, self.K), D_K)  # (1, T_q, T_k)


def tiny_example(name: str) -> Example:
    """``plain`` (6 x 6, no mask), ``padding`` (6 x 6: keys 4-5 are padding, query 5 sees nothing),
    or ``causal`` (4 queries x 6 keys, is_causal=True, top-left aligned): the names of ``examples.EXAMPLES``,
    which a check names in its marker (``picture=``)."""
    T_q = 4 if name == "causal" else 6
    T_k = 6
    generator = torch.Generator().manual_seed(SEED)
    Q = torch.randn(1, T_q, D_K, generator=generator, dtype=torch.float64) * 1.5
    K = torch.randn(1, T_k, D_K, generator=generator, dtype=torch.float64) * 1.5
    V = torch.randn(1, T_k, D_K, generator=generator, dtype=torch.float64)
    if name == "plain":
        return Example(name, Q, K, V, None)
    if name == "padding":
        lengths = torch.tensor([[4, 4, 4, 4, 4, 0]])  # (1, T_q): the last query may attend to nothing
        return Example(name, Q, K, V, ref.padding_mask(lengths, T_k)[0], lengths=lengths)
    if name == "causal":
        return Example(name, Q, K, V, ref.causal_mask(T_q, T_k), is_causal=True)
    raise ValueError(f"no tiny example named {name!r}")


def picture(student: Student, function: str, example_name: str, tolerance: Tolerance) -> dict | None:
    """The tiny example's weights, expected (the reference, here) and got (the student's, through the proxy).

    None when there is nothing to show: the student's function raised, returned something that is
    not weights of the right shape, or gives the expected weights on this tiny example. What "the
    expected weights" allows is the checks' own rule (``tolerance``, the settings' ``[tolerance]``, and
    ``expect.allowance``) on this float64 example: ``leaked`` marks the masked keys whose weight exceeds it,
    the only ones drawn as "masked key that got weight" (a weight of 1e-42 there is 0 to the check).
    """
    example = tiny_example(example_name)
    expected = ref.masked_softmax(example.scores, example.mask)[0]  # (T_q, T_k)
    allowed = allowance(expected, tolerance("float64", scale=magnitude(example.scores)))
    try:
        got = _students_weights(student, function, example)
    except StudentFault:
        return None
    if not isinstance(got, Tensor) or got.is_complex() or got.dtype == torch.bool or got.numel() != expected.numel():
        return None  # sized before any work: only weights of the tiny example's size are drawn
    got = got.detach().to(torch.float64)
    while got.dim() > 2 and got.size(0) == 1:
        got = got[0]  # (1, T_q, T_k) -> (T_q, T_k)
    if tuple(got.shape) != tuple(expected.shape):
        return None
    beyond = ~((got - expected).abs() <= allowed)  # NaN and inf included: never within what the check allows
    if not bool(beyond.any()):
        return None  # the difference shows only on the hidden inputs: a picture would show nothing
    return {
        "example": example.name,
        "function": function,
        "queries": expected.size(0),
        "keys": expected.size(1),
        "mask": None if example.mask is None else example.mask.tolist(),
        "expected": _rounded(expected),
        "got": _rounded(got),
        "leaked": None if example.mask is None else (beyond & ~example.mask).tolist(),
    }


def _students_weights(student: Student, function: str, example: Example):
    """The weights the student's ``function`` leads to on ``example``: its own, or the reference's softmax
    under its mask."""
    scores = example.scores
    if function == "masked_softmax":
        return student.masked_softmax(scores, None if example.mask is None else example.mask[None])
    if function == "scaled_dot_product_attention":
        mask = None if example.is_causal or example.mask is None else example.mask[None]
        result = student.scaled_dot_product_attention(
            example.Q, example.K, example.V, mask=mask, is_causal=example.is_causal
        )
        return result[1] if isinstance(result, tuple) and len(result) == 2 else None
    if function == "causal_mask":
        mask = student.causal_mask(*scores.shape[-2:])
    elif function == "padding_mask":
        mask = student.padding_mask(example.lengths, scores.size(-1))
    else:
        raise ValueError(f"no picture for {function}")
    # the student's mask, under the reference's softmax: the picture shows what that mask lets through
    if not isinstance(mask, Tensor) or mask.dtype != torch.bool or not _fits(mask, scores):
        return None
    return ref.masked_softmax(scores, mask)


def _fits(mask: Tensor, scores: Tensor) -> bool:
    """Whether ``mask`` broadcasts to the scores' own shape, checked before any work: a (N, 1, 1) mask would make
    the softmax (N, T_q, T_k), gigabytes for a large N."""
    try:
        return mask.numel() <= scores.numel() and torch.broadcast_shapes(mask.shape, scores.shape) == scores.shape
    except RuntimeError:  # a mask that does not broadcast with the scores
        return False


def _rounded(weights: Tensor) -> list[list[float | None]]:
    """Plain numbers for JSON, 3 decimals (3 significant digits below 0.0005, so that no weight but 0 is
    stored as 0); None where the student's weight is NaN or infinite."""
    return [[_round(x) if math.isfinite(x) else None for x in row] for row in weights.tolist()]


def _round(x: float) -> float:
    shown = round(x, 3)
    return shown if shown != 0 or x == 0 else float(f"{x:.3g}")
