"""attention_scores, scale_scores, causal_mask, padding_mask and attention_output, one at a time."""

import pytest
import torch

from autograder.checks.expect import dtype_name, expect_tensor, fail, magnitude
from autograder.checks.mistakes import causal_variants, scale_variants
from autograder.checks.student import StudentFault
from reference import attention as ref


@pytest.mark.check(function="attention_scores", category="shape", points=2, exercises=(), picture=None)
def test_scores_shape(loaded, draw, settings):
    """(..., T_q, d_k) x (..., T_k, d_k) -> (..., T_q, T_k), with zero, one and two leading dims.

    On 2-D, (B, T, d_k) and (B, H, T, d_k) inputs, with T_q != T_k.
    """
    B, H, T_q, T_k, d_k = draw.sizes(5)
    cases = [
        ("batched inputs (B, T, d_k)", (B,)),
        ("2-D inputs", ()),
        ("inputs with a head axis (B, H, T, d_k)", (B, H)),
    ]
    raised: dict[int, StudentFault] = {}
    for label, lead in cases:
        Q, K = draw.normal(*lead, T_q, d_k), draw.normal(*lead, T_k, d_k)
        try:
            got = loaded.attention_scores(Q, K)
        except StudentFault as error:
            if len(lead) == 1:
                raise
            raised[len(lead)] = error  # (B, T, d_k) worked: is it every other rank?
            continue
        size = magnitude(Q.abs() @ K.abs().transpose(-2, -1))  # a dot product's rounding grows with sum |q_i k_i|
        expect_tensor(
            got,
            ref.attention_scores(Q, K),
            what=f"attention_scores on {label}",
            tolerance=settings.tolerance("float64", scale=size),
            scale=size,
        )
    if raised:
        first = next(iter(raised.values()))
        # transposing axes 1 and 2 breaks on 2-D inputs and on a head axis alike: named only where both break
        fail(f"{first}; it worked on (B, T, d_k)", "transpose_12" if set(raised) == {0, 2} else None)


@pytest.mark.check(function="attention_scores", category="values", points=2, exercises=(), picture=None)
def test_scores_values(loaded, draw, settings):
    """Each score is one query dotted with one key, in float64 and float32."""
    B, T_q, T_k, d_k = draw.sizes(4)
    for dtype in (torch.float64, torch.float32):
        Q, K = draw.normal(B, T_q, d_k, dtype=dtype), draw.normal(B, T_k, d_k, dtype=dtype)
        expected = ref.attention_scores(Q.double(), K.double())
        name = dtype_name(dtype)
        size = magnitude(Q.double().abs() @ K.double().abs().transpose(-2, -1))
        expect_tensor(
            loaded.attention_scores(Q, K),
            expected,
            what=f"attention_scores in {name}",
            tolerance=settings.tolerance(name, scale=size),
            dtype=dtype,
            scale=size,
        )


@pytest.mark.check(function="scale_scores", category="values", points=2, exercises=(), picture=None)
def test_scale_values(loaded, draw, settings):
    """Scores are divided by sqrt(d_k), for several d_k."""
    B, T_q, T_k = draw.sizes(3)
    for d_k in (16, 64):
        scores = draw.normal(B, T_q, T_k, scale=d_k**0.5)
        size = magnitude(scores)
        expect_tensor(
            loaded.scale_scores(scores, d_k),
            ref.scale_scores(scores, d_k),
            what=f"scale_scores with d_k={d_k}",
            tolerance=settings.tolerance("float64", scale=size),
            variants=scale_variants(scores, d_k),
            scale=size,
        )


@pytest.mark.check(function="causal_mask", category="causal", points=1, exercises=(), picture="causal")
def test_causal_square(loaded, draw, settings):
    """causal_mask(T) is True on and below the diagonal, as a bool tensor."""
    (T,) = draw.sizes(1, low=3)
    expect_tensor(
        loaded.causal_mask(T),
        ref.causal_mask(T),
        what=f"causal_mask({T})",
        tolerance=(0, 0),
        variants=causal_variants(T, T),
    )


@pytest.mark.check(function="causal_mask", category="causal", points=2, exercises=(), picture="causal")
def test_causal_rectangular(loaded, draw, settings):
    """With T_q != T_k (one query or one key included) the mask stays top-left aligned,
    like is_causal=True in PyTorch."""
    small, large = sorted(draw.sizes(2, low=3))
    # a single query (decoding) or a single key: query 0 still sees key 0 only
    for T_q, T_k in ((small, large), (large, small), (1, large), (large, 1)):
        expect_tensor(
            loaded.causal_mask(T_q, T_k),
            ref.causal_mask(T_q, T_k),
            what=f"causal_mask(T_q={T_q}, T_k={T_k})",
            tolerance=(0, 0),
            variants=causal_variants(T_q, T_k),
        )


@pytest.mark.check(function="padding_mask", category="masking", points=2, exercises=(), picture="padding")
def test_padding_lengths(loaded, draw, settings):
    """Lengths (B,) give a (B, 1, T_k) mask, lengths (B, T_q) a (B, T_q, T_k) mask.

    On every draw a length of 0 (a fully masked row), of 1 and of T_k, at drawn places.
    """
    B, T_q, T_k = draw.sizes(3)
    per_sequence = draw.lengths(B, T_k)
    per_query = draw.lengths(B * T_q, T_k).reshape(B, T_q)
    # on every draw, at places drawn too: a sequence with no padding and one with a single key; a query with no key
    # (a fully masked row), one with a single key and one with no padding
    per_sequence[torch.randperm(B, generator=draw.generator)[:2]] = torch.tensor([T_k, 1])
    per_query.view(-1)[torch.randperm(B * T_q, generator=draw.generator)[:3]] = torch.tensor([0, 1, T_k])
    for lengths, label in ((per_sequence, "lengths of shape (B,)"), (per_query, "lengths of shape (B, T_q)")):
        expected = ref.padding_mask(lengths, T_k)
        inverted = {"mask_inverted": ~expected}
        expect_tensor(
            loaded.padding_mask(lengths, T_k),
            expected,
            what=f"padding_mask with {label}",
            tolerance=(0, 0),
            variants=inverted,
        )


@pytest.mark.check(function="attention_output", category="values", points=2, exercises=(), picture=None)
def test_output_values(loaded, draw, settings):
    """weights @ V, with a head axis and d_v different from every other size."""
    B, H, T_q, T_k, d_v = draw.sizes(5)
    weights = torch.softmax(draw.normal(B, H, T_q, T_k), dim=-1)
    V = draw.normal(B, H, T_k, d_v)
    for dtype in (torch.float64, torch.float32):
        name = dtype_name(dtype)
        size = magnitude(weights.abs() @ V.abs())
        expect_tensor(
            loaded.attention_output(weights.to(dtype), V.to(dtype)),
            ref.attention_output(weights, V),
            what=f"attention_output in {name}",
            tolerance=settings.tolerance(name, scale=size),
            dtype=dtype,
            scale=size,
        )
