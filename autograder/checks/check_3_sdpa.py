"""scaled_dot_product_attention: shapes, agreement with PyTorch's own, masks, dtypes, gradients."""

import pytest
import torch
import torch.nn.functional as F

from autograder.checks.cases import both_orders
from autograder.checks.expect import Cases, attention_size, dtype_name, edge_case, expect_tensor, fail
from autograder.checks.mistakes import sdpa_variants
from reference import attention as ref


def _run(loaded, Q, K, V, mask=None, is_causal=False, grad_outputs=None, positional=False, **options):
    """The student's attention on these inputs (``positional``: the mask passed as the fourth argument, as the
    mutation check sends it; without a mask or is_causal, Q, K and V alone). Whether a failure builds on the student's
    own steps is decided outside the check, by running it again with them answered by the reference
    (checks/substitution.py)."""
    target = "scaled_dot_product_attention"
    if positional:
        return loaded.run(target, Q, K, V, mask, grad_outputs=grad_outputs, **options)
    if mask is None and not is_causal and grad_outputs is None:
        return loaded.run(target, Q, K, V, **options)
    return loaded.run(target, Q, K, V, mask=mask, is_causal=is_causal, grad_outputs=grad_outputs, **options)


def _compare(loaded, settings, label, Q, K, V, mask=None, is_causal=False, oracle=None):
    """Output against ``oracle`` (default: the reference) and weights against the reference, in float64."""
    size = attention_size(Q, K, V)
    tolerance = settings.tolerance(dtype_name(Q.dtype), scale=size)
    reply = _run(loaded, Q, K, V, mask=mask, is_causal=is_causal)
    output, weights = _pair(reply.value, label)
    expected_output, expected_weights = ref.scaled_dot_product_attention(Q, K, V, mask, is_causal)
    if oracle is not None:
        expected_output = oracle
    variants = sdpa_variants(Q, K, V, mask, is_causal)
    if min(Q.size(-2), K.size(-2), Q.size(-1)) == 1:
        # one query, one key or d_k = 1: classic mistakes coincide with each other, or with the
        # right answer, or with unrelated bugs (one key: any zeroed row looks like an inverted mask);
        # matching one is no evidence, so none is named
        variants = {}
    expect_tensor(
        output,
        expected_output,
        what=f"the output {label}",
        tolerance=tolerance,
        variants={name: out for name, (out, _) in variants.items()},
        scale=size,
    )
    expect_tensor(
        weights,
        expected_weights,
        what=f"the weights {label}",
        tolerance=tolerance,
        variants={name: w for name, (_, w) in variants.items()},
        scale=size,
    )


def _pair(result, label):
    if not (isinstance(result, tuple) and len(result) == 2):
        fail(f"scaled_dot_product_attention {label}: expected a pair (output, weights), got {type(result).__name__}")
    return result


@pytest.mark.check(function="scaled_dot_product_attention", category="shape", points=2, exercises=(), picture=None)
def test_sdpa_lesson_shape(loaded, draw, settings):
    """The lesson's question: (32, 50, 64), (32, 50, 64), (32, 50, 128) -> (32, 50, 128) and weights (32, 50, 50)."""
    B, T, d_k, d_v = settings.lesson.batch, settings.lesson.sequence, settings.lesson.d_k, settings.lesson.d_v
    Q, K, V = (
        draw.normal(B, T, d_k, dtype=torch.float32),
        draw.normal(B, T, d_k, dtype=torch.float32),
        draw.normal(B, T, d_v, dtype=torch.float32),
    )
    output, weights = _pair(_run(loaded, Q, K, V).value, "on the lesson's shapes")
    for tensor, shape, what in ((output, (B, T, d_v), "output"), (weights, (B, T, T), "weights")):
        if not isinstance(tensor, torch.Tensor) or tuple(tensor.shape) != shape:
            found = tuple(tensor.shape) if isinstance(tensor, torch.Tensor) else type(tensor).__name__
            fail(f"the {what} on the lesson's shapes: shape {found}, expected {shape}")


@pytest.mark.check(
    function="scaled_dot_product_attention", category="matches-torch", points=4, exercises=("mask",), picture="padding"
)
def test_sdpa_matches_torch(loaded, draw, settings):
    """Agrees with F.scaled_dot_product_attention without a mask, with broadcast bool masks, and on edge shapes.

    No mask and masks (T_q, T_k), (B, 1, 1, T_k) and (B, H, T_q, T_k), each with fewer queries than keys and with
    more, on every draw and in that order, and 3-D inputs; edge shapes: 2-D inputs, B = 1, T_q = 1 (without a mask
    and with a padding mask), T_k = 1, d_k = 1; more heads than the batch.
    """
    B, H, T_q, T_k, d_k, d_v = draw.sizes(6)
    B, H = sorted((B, H))  # more heads than the batch, on every run
    # fewer queries than keys first, then more, whatever the draw: a mistake of either order shows on every grading
    # and is worded the same way on every seed
    (T_q, T_k, _), (_, _, more) = both_orders(T_q, T_k)
    Q, K, V = draw.normal(B, H, T_q, d_k), draw.normal(B, H, T_k, d_k), draw.normal(B, H, T_k, d_v)
    cases = [
        ("without a mask", None),
        ("with a (T_q, T_k) mask", draw.mask(T_q, T_k)),
        ("with a (B, 1, 1, T_k) padding mask", draw.mask(B, 1, 1, T_k)),
        ("with a (B, H, T_q, T_k) mask", draw.mask(B, H, T_q, T_k)),
    ]
    held = Cases()
    for label, mask in cases:
        oracle = F.scaled_dot_product_attention(Q, K, V, attn_mask=mask)
        with held:
            _compare(loaded, settings, label, Q, K, V, mask=mask, oracle=oracle)
    # the same cases with the query and key lengths swapped: more queries than keys, without a mask and under every
    # mask, on every draw (the drawn order alone would leave an error of one order to half the gradings)
    Qs, Ks, Vs = draw.normal(B, H, T_k, d_k), draw.normal(B, H, T_q, d_k), draw.normal(B, H, T_q, d_v)
    for label, mask in (
        ("without a mask", None),
        ("with a (T_q, T_k) mask", draw.mask(T_k, T_q)),
        ("with a (B, 1, 1, T_k) padding mask", draw.mask(B, 1, 1, T_q)),
        ("with a (B, H, T_q, T_k) mask", draw.mask(B, H, T_k, T_q)),
    ):
        oracle = F.scaled_dot_product_attention(Qs, Ks, Vs, attn_mask=mask)
        with held:
            _compare(loaded, settings, f"{label}, {more}", Qs, Ks, Vs, mask, oracle=oracle)
    Q3, K3, V3 = Q[:, 0], K[:, 0], V[:, 0]
    with held:
        _compare(loaded, settings, "on (B, T, d) inputs", Q3, K3, V3, oracle=F.scaled_dot_product_attention(Q3, K3, V3))
    # edge shapes where the spec still defines the answer
    edges = [
        ("on (T, d) inputs without a batch axis", Q[0, 0], K[0, 0], V[0, 0]),
        ("with a batch of one", Q[:1], K[:1], V[:1]),
        ("with a single query (T_q = 1)", Q[:, :, :1], K, V),
        ("with a single query (T_q = 1) and a (B, 1, 1, T_k) padding mask", Q[:, :, :1], K, V, cases[2][1]),
        ("with a single key (T_k = 1)", Q, K[:, :, :1], V[:, :, :1]),
        ("with d_k = 1", Q[..., :1], K[..., :1], V),
    ]
    for label, Qe, Ke, Ve, *masks in edges:
        mask = masks[0] if masks else None
        with held, edge_case():
            oracle = F.scaled_dot_product_attention(Qe, Ke, Ve, attn_mask=mask)
            _compare(loaded, settings, label, Qe, Ke, Ve, mask=mask, oracle=oracle)
    held.done()


@pytest.mark.check(
    function="scaled_dot_product_attention", category="causal", points=3, exercises=("mask", "causal"), picture="causal"
)
def test_sdpa_causal(loaded, draw, settings):
    """is_causal=True with T_q < T_k and T_q > T_k (top-left aligned), one query or one key, and causal plus padding."""
    B, H, small, large, d_k, d_v = draw.sizes(6)
    small, large = sorted((small, large))
    # T_q = 1: under the top-left rule the single query sees key 0 only (no decoding shortcut)
    held = Cases()
    for T_q, T_k in ((small, large), (large, small), (1, large), (large, 1)):
        Q, K, V = draw.normal(B, H, T_q, d_k), draw.normal(B, H, T_k, d_k), draw.normal(B, H, T_k, d_v)
        oracle = F.scaled_dot_product_attention(Q, K, V, is_causal=True)
        label = f"with is_causal=True, T_q={T_q}, T_k={T_k}"
        with held:
            _compare(loaded, settings, label, Q, K, V, is_causal=True, oracle=oracle)
    T = large
    Q, K, V = draw.normal(B, H, T, d_k), draw.normal(B, H, T, d_k), draw.normal(B, H, T, d_v)
    padding = ref.padding_mask(draw.lengths(B, T), T)[:, None]  # (B, 1, 1, T)
    oracle = F.scaled_dot_product_attention(Q, K, V, attn_mask=padding & torch.ones(T, T, dtype=torch.bool).tril())
    with held:
        label = "with is_causal=True and a padding mask"
        _compare(loaded, settings, label, Q, K, V, mask=padding, is_causal=True, oracle=oracle)
    held.done()


@pytest.mark.check(
    function="scaled_dot_product_attention",
    category="nan-safety",
    points=2,
    exercises=("mask", "fully-masked"),
    picture="padding",
)
def test_sdpa_fully_masked(loaded, draw, settings):
    """Queries that may attend to nothing get zero weights, a zero output and finite gradients.

    A single key (T_k = 1), masked on some rows; fewer queries than keys and more, on every draw.
    """
    B, *lengths, d_k, d_v = draw.sizes(5)
    held = Cases()
    for T_q, T_k, order in both_orders(*lengths):
        Q, K, V = draw.normal(B, T_q, d_k), draw.normal(B, T_k, d_k), draw.normal(B, T_k, d_v)
        mask = draw.mask(B, T_q, T_k)
        mask[0, 1] = False
        mask[-1, 0] = False
        with held:
            oracle = F.scaled_dot_product_attention(Q, K, V, attn_mask=mask)
            _compare(loaded, settings, f"with fully masked rows, {order}", Q, K, V, mask=mask, oracle=oracle)
    # with more queries than keys (the last order): a single key (T_k = 1), masked on the fully masked rows and
    # allowed on the others, and the gradients
    one = (K[:, :1], V[:, :1], mask[..., :1])
    with held:
        oracle = F.scaled_dot_product_attention(Q, *one[:2], attn_mask=one[2])
        _compare(
            loaded,
            settings,
            "with fully masked rows and a single key (T_k = 1)",
            Q,
            *one[:2],
            mask=one[2],
            oracle=oracle,
        )
    grad_outputs = [draw.normal(B, T_q, d_v), draw.normal(B, T_q, T_k)]
    reply = _run(loaded, Q, K, V, mask, grad=[0, 1, 2], grad_outputs=grad_outputs)
    for name, grad in zip("QKV", reply.grads):
        if not bool(grad.isfinite().all()):
            fail(
                f"the gradient for {name} with fully masked rows contains NaN or inf",
                hint="exp(-inf - (-inf)) is NaN: shift fully masked rows by 0 instead of their max,"
                " and divide them by 1, not by 0",
            )
    held.done()


@pytest.mark.check(
    function="scaled_dot_product_attention", category="dtype", points=2, exercises=("mask",), picture=None
)
def test_sdpa_dtypes(loaded, draw, settings):
    """float32, float16 and bfloat16 inputs give outputs of the same dtype, within that dtype's tolerance.

    Fewer queries than keys and more, on every draw.
    """
    B, *lengths, d_k, d_v = draw.sizes(5)
    held = Cases()
    for T_q, T_k, order in both_orders(*lengths):
        Q, K, V = draw.normal(B, T_q, d_k), draw.normal(B, T_k, d_k), draw.normal(B, T_k, d_v)
        mask = draw.mask(B, T_q, T_k)
        for dtype in (torch.float32, torch.float16, torch.bfloat16):
            with held:
                _dtype_case(loaded, settings, [x.to(dtype) for x in (Q, K, V)], mask, dtype, order)
    held.done()


def _dtype_case(loaded, settings, low, mask, dtype, order):
    size = attention_size(*low)
    tolerance = settings.tolerance(dtype_name(dtype), scale=size)
    reply = _run(loaded, *low, mask=mask)
    where = f"in {dtype_name(dtype)}, {order}"
    output, weights = _pair(reply.value, where)
    expected_output, expected_weights = ref.scaled_dot_product_attention(*[x.double() for x in low], mask)
    for got, want, what in ((output, expected_output, "output"), (weights, expected_weights, "weights")):
        expect_tensor(got, want, what=f"the {what} {where}", tolerance=tolerance, dtype=dtype, scale=size)


@pytest.mark.check(
    function="scaled_dot_product_attention", category="gradient", points=3, exercises=("mask",), picture=None
)
def test_sdpa_gradients(loaded, draw, settings):
    """Gradients for Q, K and V match the reference's, through both the output and the weights.

    Fewer queries than keys and more, on every draw.
    """
    B, H, *lengths, d_k, d_v = draw.sizes(6)
    B, H = sorted((B, H))  # the same relation of B and H on every run
    # the inputs are of size 1: gradient_factor times the plain tolerance holds honest gradients 30x below
    # it and a float16 softmax inside 16x above (a scaled allowance would let float16 come within 4x)
    tolerance = settings.tolerance("float64", gradient=True)
    held = Cases()
    for T_q, T_k, order in both_orders(*lengths):
        Q, K, V = draw.normal(B, H, T_q, d_k), draw.normal(B, H, T_k, d_k), draw.normal(B, H, T_k, d_v)
        mask = draw.mask(B, 1, T_q, T_k)
        grad_outputs = [draw.normal(B, H, T_q, d_v), draw.normal(B, H, T_q, T_k)]
        with held:
            reply = _run(loaded, Q, K, V, mask, grad=[0, 1, 2], grad_outputs=grad_outputs)
            inputs = [x.clone().requires_grad_(True) for x in (Q, K, V)]
            expected = torch.autograd.grad(ref.scaled_dot_product_attention(*inputs, mask), inputs, grad_outputs)
            for name, got, want in zip("QKV", reply.grads, expected):
                expect_tensor(got, want, what=f"the gradient for {name}, {order}", tolerance=tolerance)
    held.done()


@pytest.mark.check(
    function="scaled_dot_product_attention", category="no-mutation", points=1, exercises=("mask",), picture=None
)
def test_sdpa_no_mutation(loaded, draw, settings):
    """Q, K, V and the mask are left as they were."""
    B, T_q, T_k, d_k, d_v = draw.sizes(5)
    args = (draw.normal(B, T_q, d_k), draw.normal(B, T_k, d_k), draw.normal(B, T_k, d_v), draw.mask(B, T_q, T_k))
    reply = _run(loaded, *args, positional=True)
    names = [name for name, changed in zip(("Q", "K", "V", "mask"), reply.mutated) if changed]
    if names:
        fail(f"scaled_dot_product_attention modified {', '.join(names)} in place; use out-of-place operations")
