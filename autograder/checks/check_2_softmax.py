"""masked_softmax: values, masks, fully masked rows, large scores, and no mutation."""

import pytest
import torch

from autograder.checks.cases import both_orders
from autograder.checks.expect import dtype_name, expect_tensor, fail, magnitude
from autograder.checks.mistakes import softmax_variants
from reference import attention as ref


def _reference_grad(scores, mask, grad_output):
    scores = scores.detach().clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(ref.masked_softmax(scores, mask), scores, grad_output)
    return grad


@pytest.mark.check(function="masked_softmax", category="values", points=2, exercises=(), picture="plain")
def test_softmax_values(loaded, draw, settings):
    """Without a mask: an ordinary softmax over the last (key) axis, in float64 and float32.

    With fewer queries than keys and with more, on every draw.
    """
    B, *lengths = draw.sizes(3)
    for T_q, T_k, order in both_orders(*lengths):
        scores = draw.normal(B, T_q, T_k, scale=3.0)
        size = magnitude(scores)  # softmax's rounding grows with the size of the scores, not of the weights
        for dtype in (torch.float64, torch.float32):
            name = dtype_name(dtype)
            expect_tensor(
                loaded.masked_softmax(scores.to(dtype)),
                ref.masked_softmax(scores.to(dtype).double()),
                what=f"masked_softmax without a mask in {name}, {order}",
                tolerance=settings.tolerance(name, scale=size),
                variants=softmax_variants(scores, None),
                dtype=dtype,
                scale=size,
            )


@pytest.mark.check(function="masked_softmax", category="masking", points=3, exercises=("mask",), picture="padding")
def test_softmax_masked(loaded, draw, settings):
    """Masked keys get weight exactly 0, with masks that broadcast from (T_q, T_k) and (B, 1, T_k).

    A single query (T_q = 1) under a mask too; every drawn mask has a row with exactly one allowed key; each mask with
    fewer queries than keys and with more, on every draw.
    """
    B, *lengths = draw.sizes(3)
    cases = []
    for T_q, T_k, order in both_orders(*lengths):
        scores = draw.normal(B, T_q, T_k, scale=3.0)
        padding = draw.mask(B, 1, T_k)
        cases += [
            (scores, draw.mask(T_q, T_k), f"a (T_q, T_k) mask, {order}"),
            (scores, padding, f"a (B, 1, T_k) mask, {order}"),
        ]
    cases.append((scores[:, :1], padding, "a single query (T_q = 1) and a (B, 1, T_k) mask"))  # no shortcut for one
    for scores, mask, label in cases:
        expected = ref.masked_softmax(scores, mask)
        got = loaded.masked_softmax(scores, mask)
        what = f"masked_softmax with {label}"
        size = magnitude(scores)
        expect_tensor(
            got,
            expected,
            what=what,
            tolerance=settings.tolerance("float64", scale=size),
            variants=softmax_variants(scores, mask),
            scale=size,
        )


@pytest.mark.check(
    function="masked_softmax", category="nan-safety", points=3, exercises=("mask", "fully-masked"), picture="padding"
)
def test_softmax_fully_masked(loaded, draw, settings):
    """A row with no allowed key is all zeros, never NaN, and its gradient is finite.

    The gradients are correct too; a single key (T_k = 1), masked on some rows; fewer queries than keys and more, on
    every draw.
    """
    B, *lengths = draw.sizes(3)
    for T_q, T_k, order in both_orders(*lengths):
        scores = draw.normal(B, T_q, T_k)
        mask = draw.mask(B, T_q, T_k)
        mask[0, 0] = False
        mask[-1, -2] = False  # not the last row: that one has a single allowed key (Draw.mask)
        grad_output = draw.normal(B, T_q, T_k)
        reply = loaded.run("masked_softmax", scores, mask, grad=[0], grad_outputs=[grad_output])
        variants = softmax_variants(scores, mask)
        size = magnitude(scores)
        expect_tensor(
            reply.value,
            ref.masked_softmax(scores, mask),
            what=f"masked_softmax with fully masked rows, {order}",
            tolerance=settings.tolerance("float64", scale=size),
            variants=variants,
            scale=size,
        )
        grad = reply.grads[0]
        if not bool(grad.isfinite().all()):
            fail(f"the gradient of masked_softmax with fully masked rows, {order}, contains NaN or inf", "nan_rows")
        expect_tensor(
            grad,
            _reference_grad(scores, mask, grad_output),
            what=f"the gradient of masked_softmax with fully masked rows, {order}",
            tolerance=settings.tolerance("float64", gradient=True, scale=size * magnitude(grad_output)),
            scale=size,
        )
    # a single key (T_k = 1), masked on the fully masked rows and allowed on the others: a special case for one key
    # must still honour the mask (with one key the classic mistakes coincide, so none is named)
    one, one_mask = scores[..., :1], mask[..., :1]
    expect_tensor(
        loaded.masked_softmax(one, one_mask),
        ref.masked_softmax(one, one_mask),
        what="masked_softmax with fully masked rows and a single key (T_k = 1)",
        tolerance=settings.tolerance("float64", scale=magnitude(one)),
        scale=magnitude(one),
    )


@pytest.mark.check(
    function="masked_softmax", category="stability", points=2, exercises=("mask", "large-scores"), picture=None
)
def test_softmax_stability(loaded, draw, settings):
    """Scores around 1e4 (float32 and float64) neither overflow nor give NaN, on the masked path too.

    On every draw a row entirely below -1.1e4 and one entirely above 1.1e4 (a running maximum started at -10000, a C
    port's float32 idiom, zeroes the first: `mistake_running_max_floor` fails on 50 of 50 seeds, it passed on 42 of
    50 when the draw decided), without a mask and with a mask that allows every key (so masking mistakes are judged
    by the masking checks alone); every row's top two scores 0.5 to 2 apart, so precision loss (a float16 softmax:
    steps of 8 at this size) fails on every draw, not on the 8% of random draws that held a close pair; the
    allowance grows with the scores' size (about 0.02 here): a float32 softmax inside float64 work passes on 1000 of
    1000 seeds, float16 inside fails on 1000 of 1000 (docs/grading.md, Tolerances). Fewer queries than keys and more,
    on every draw.
    """
    B, *lengths = draw.sizes(3)
    for T_q, T_k, order in both_orders(*lengths):
        _stability_case(loaded, draw, settings, B, T_q, T_k, order)


def _stability_case(loaded, draw, settings, B, T_q, T_k, order):
    scores = draw.normal(B, T_q, T_k, scale=1e4)
    # on every draw, a row entirely far below zero and one entirely far above (scores of 1.1e4 to 1.2e4 in size): a
    # running maximum started at -10000 (a C port's float32 idiom) zeroes the first, a capped one overflows the
    # second; left to the draw, such a row would exist on about 8 seeds of 50 (mistake_running_max_floor)
    far = 1.1e4 + 1e3 * torch.rand(B, 2, T_k, generator=draw.generator, dtype=torch.float64)
    scores[:, 0], scores[:, -1] = -far[:, 0], far[:, 1]
    # a near tie at the top of every row, the runner-up 0.5 to 2 below the winner: float16 rounding
    # (steps of 8 at this size) then always shows, so code that loses precision fails on every draw,
    # not on the 8% of draws that happened to hold a close pair (float32 keeps such a gap exactly)
    top = scores.topk(2, dim=-1)
    gap = 0.5 + 1.5 * torch.rand(B, T_q, 1, generator=draw.generator, dtype=torch.float64)
    scores.scatter_(-1, top.indices[..., 1:], top.values[..., :1] - gap)
    # a mask that allows every key: the masked code path runs, and a masking mistake (checked
    # elsewhere) cannot pass or fail here by the luck of the draw
    mask = torch.ones(B, T_q, T_k, dtype=torch.bool)
    # the allowance grows with the scores' size: a float32 softmax inside float64 work (the Llama idiom,
    # scores.float() then back) errs by up to 4e-4 here and passes; float16 rounding errs by 0.25 or more
    size = magnitude(scores)
    for dtype in (torch.float32, torch.float64):
        name = dtype_name(dtype)
        for used_mask, label in ((None, "without a mask"), (mask, "with a mask")):
            got = loaded.masked_softmax(scores.to(dtype), used_mask)
            if isinstance(got, torch.Tensor) and not bool(got.isfinite().all()):
                what = f"masked_softmax on scores of size 1e4 in {name} {label}, {order}"
                fail(f"{what}: contains NaN or inf", "overflow")
            expected = ref.masked_softmax(scores.to(dtype).double(), used_mask)
            expect_tensor(
                got,
                expected,
                what=f"masked_softmax on scores of size 1e4 in {name} {label}, {order}",
                tolerance=settings.tolerance(name, scale=size),
                dtype=dtype,
                scale=size,
            )


@pytest.mark.check(function="masked_softmax", category="no-mutation", points=1, exercises=("mask",), picture=None)
def test_softmax_no_mutation(loaded, draw, settings):
    """masked_softmax leaves its scores and its mask as they were."""
    B, T_q, T_k = draw.sizes(3)
    reply = loaded.run("masked_softmax", draw.normal(B, T_q, T_k), draw.mask(B, T_q, T_k))
    names = [name for name, changed in zip(("scores", "mask"), reply.mutated) if changed]
    if names:
        fail(
            f"masked_softmax modified its argument(s) {', '.join(names)} in place (for example with masked_fill_)"
            "; use the out-of-place masked_fill, which returns a new tensor"
        )
