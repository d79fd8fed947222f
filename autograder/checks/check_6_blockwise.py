"""blockwise_attention (an optional part: [parts] blockwise_attention): attention over blocks of keys with a running
maximum, sum and output, graded for its values, stability, gradients, integrity and the memory it creates."""

import math

import pytest
import torch
import torch.nn.functional as F

from autograder.checks.expect import Cases, attention_size, dtype_name, edge_case, expect_tensor, fail
from autograder.checks.flags import flag
from autograder.checks.integrity import dynamic_reach
from autograder.checks.mistakes import blockwise_variants
from reference import attention as ref

FUNCTION = "blockwise_attention"
# the memory check's shapes: many more keys than a block, so that a (T_q, T_k) tensor stands far above the blocks'
MEMORY_SHAPE = {"T_q": 32, "T_k": 256, "d_k": 8, "d_v": 8, "block_size": 16}
# the most bytes the call may hold at once, in units of T_q x (d_k + d_v + block_size) elements per (batch, head):
# the reference peaks at 2.4 of them (tests/test_memory_measure.py); the (T_q, T_k) matrix alone is 8, and the scores
# built whole then scaled 16
PEAK_UNITS = 5


def _block_sizes(draw, T_q: int, T_k: int) -> list[int]:
    """Every awkward block size, and each input of a value check meets them all (a crash on one of them shows on every
    draw, not on the draws that happen to pair it with the input it breaks on): a block of one key; one that does not
    divide T_k (a last, shorter block); T_q itself, and one that does not divide T_q (a port that also slices the
    queries by block_size meets whole slices and a shorter last one); one block holding every key."""
    partial = next(size for size in [*range(3, T_k), 2, T_k + 1] if T_k % size)
    unsliced = next(size for size in range(2, T_q + 2) if T_q % size)
    return sorted({1, partial, T_q, unsliced, T_k + draw.integer(0, 3)})


def _compare(loaded, settings, label, Q, K, V, mask=None, is_causal=False, block_size=16):
    """The student's output against F.scaled_dot_product_attention's, computed in float64."""
    size = attention_size(Q, K, V)
    tolerance = settings.tolerance(dtype_name(Q.dtype), scale=size)
    arguments = {"mask": mask, "is_causal": is_causal, "block_size": block_size}
    output = loaded.run(FUNCTION, Q, K, V, **arguments).value
    expected = _oracle(Q, K, V, mask, is_causal)
    expect_tensor(
        output,
        expected.to(Q.dtype) if Q.dtype != torch.float64 else expected,
        what=f"blockwise_attention's output {label} (block_size={block_size})",
        tolerance=tolerance,
        variants=lambda: blockwise_variants(Q, K, V, mask, is_causal, block_size),  # made only for a wrong result
        scale=size,
    )


def _oracle(Q, K, V, mask=None, is_causal=False):
    """PyTorch's attention in float64, with a fully masked row all zeros (the assignment's rule, and today's torch)."""
    Q, K, V = Q.double(), K.double(), V.double()
    if is_causal:
        causal = torch.ones(Q.size(-2), K.size(-2), dtype=torch.bool).tril()
        mask = causal if mask is None else mask & causal
    output = F.scaled_dot_product_attention(Q, K, V, attn_mask=mask)
    if mask is not None:  # rows with no allowed key: zeros whatever the torch version gives
        allowed = mask.expand(*output.shape[:-1], K.size(-2)).any(dim=-1, keepdim=True)
        output = torch.where(allowed, output, torch.zeros_like(output))
    return output


@pytest.mark.check(
    function="blockwise_attention", category="matches-torch", points=3, exercises=("mask",), picture=None
)
def test_blockwise_matches_torch(loaded, draw, settings):
    """Agrees with F.scaled_dot_product_attention, without a mask and with broadcast bool masks, for a block of one
    key, a block size that does not divide T_k, and one block holding every key; float64 and float32, 4-D, 3-D and
    2-D inputs, T_q != T_k."""
    B, H, T_q, d_k, d_v = draw.sizes(5)
    T_k = draw.integer(13, 40)
    Q, K, V = draw.normal(B, H, T_q, d_k), draw.normal(B, H, T_k, d_k), draw.normal(B, H, T_k, d_v)
    masks = [
        ("without a mask", None),
        ("with a (T_q, T_k) mask", draw.mask(T_q, T_k)),
        ("with a (B, 1, 1, T_k) padding mask", draw.mask(B, 1, 1, T_k)),
        ("with a (B, H, T_q, T_k) mask", draw.mask(B, H, T_q, T_k)),
    ]
    held = Cases()
    sizes = _block_sizes(draw, T_q, T_k)
    for block_size in sizes:
        for label, mask in masks:
            with held:
                _compare(loaded, settings, label, Q, K, V, mask, block_size=block_size)
        with held:
            _compare(
                loaded, settings, "in float32", *(x.float() for x in (Q, K, V)), masks[3][1], block_size=block_size
            )
        with held:
            _compare(loaded, settings, "on (B, T, d) inputs", Q[:, 0], K[:, 0], V[:, 0], block_size=block_size)
        with held, edge_case():
            _compare(loaded, settings, "on (T, d) inputs", Q[0, 0], K[0, 0], V[0, 0], block_size=block_size)
    held.done()


@pytest.mark.check(
    function="blockwise_attention", category="causal", points=2, exercises=("mask", "causal"), picture=None
)
def test_blockwise_causal(loaded, draw, settings):
    """is_causal=True, top-left aligned, with T_q < T_k and T_q > T_k, and with a padding mask as well."""
    B, H, d_k, d_v = draw.sizes(4)
    small, large = draw.integer(3, 9), draw.integer(13, 40)
    held = Cases()
    for T_q, T_k in ((small, large), (large, small)):
        Q, K, V = draw.normal(B, H, T_q, d_k), draw.normal(B, H, T_k, d_k), draw.normal(B, H, T_k, d_v)
        for block_size in _block_sizes(draw, T_q, T_k):
            with held:
                label = f"with is_causal=True, T_q={T_q}, T_k={T_k}"
                _compare(loaded, settings, label, Q, K, V, None, True, block_size)
    Q, K, V = draw.normal(B, H, large, d_k), draw.normal(B, H, large, d_k), draw.normal(B, H, large, d_v)
    padding = ref.padding_mask(draw.lengths(B, large), large)[:, None]  # (B, 1, 1, T)
    for block_size in _block_sizes(draw, large, large):
        with held:
            _compare(loaded, settings, "with is_causal=True and a padding mask", Q, K, V, padding, True, block_size)
    held.done()


@pytest.mark.check(
    function="blockwise_attention", category="nan-safety", points=2, exercises=("mask", "fully-masked"), picture=None
)
def test_blockwise_fully_masked(loaded, draw, settings):
    """Queries that may attend to nothing get a zero output, never NaN, with finite gradients; a row masked in
    every block but the last, too."""
    B, T_q, d_k, d_v = draw.sizes(4, low=3)
    T_k = draw.integer(13, 40)
    Q, K, V = draw.normal(B, T_q, d_k), draw.normal(B, T_k, d_k), draw.normal(B, T_k, d_v)
    mask = draw.mask(B, T_q, T_k)
    mask[0, 1] = False  # no key at all
    mask[-1, 0] = False
    mask[-1, 0, -1] = True  # only the last key: every block before it is fully masked for this row
    grad_output = draw.normal(B, T_q, d_v)
    held = Cases()
    for block_size in _block_sizes(draw, T_q, T_k):
        with held:
            _compare(loaded, settings, "with fully masked rows", Q, K, V, mask, block_size=block_size)
        reply = loaded.run(FUNCTION, Q, K, V, mask, False, block_size, grad=[0, 1, 2], grad_outputs=[grad_output])
        for name, grad in zip("QKV", reply.grads):
            if not bool(grad.isfinite().all()):
                with held:
                    fail(
                        f"the gradient for {name} with fully masked rows (block_size={block_size}) contains NaN or inf",
                        hint="exp(-inf - (-inf)) is NaN: while a row has no allowed key, shift it by 0 instead of its"
                        " running maximum, and divide a zero sum by 1",
                    )
                break
    held.done()


@pytest.mark.check(
    function="blockwise_attention", category="stability", points=2, exercises=("mask", "large-scores"), picture=None
)
def test_blockwise_stability(loaded, draw, settings):
    """Scores near 1e4 of either sign, growing from block to block; rows whose every score is far below zero; masked
    keys with far larger scores than the allowed ones. Right, and never inf or NaN."""
    B, T_q = draw.sizes(2)
    T_k, d = draw.integer(13, 40), 4
    K = draw.normal(B, T_k, d).abs() * 70  # every key points the same way: scores of one sign per query
    V = draw.normal(B, T_k, d)
    rising = K * torch.linspace(0.2, 1.0, T_k, dtype=K.dtype)[:, None]  # later keys score higher: the max grows
    cases = [
        ("with scores near 1e4 that grow from block to block", draw.normal(B, T_q, d).abs() * 70, rising, None),
        ("with every score far below zero", -draw.normal(B, T_q, d).abs() * 70, K, None),
        ("with masked keys scoring far above the allowed ones", draw.normal(B, T_q, d) * 70, K, draw.mask(B, T_q, T_k)),
    ]
    held = Cases()
    for block_size in _block_sizes(draw, T_q, T_k):
        for label, Q, keys, mask in cases:
            with held:
                _compare(loaded, settings, label, Q, keys, V, mask, block_size=block_size)
    held.done()


@pytest.mark.check(function="blockwise_attention", category="gradient", points=2, exercises=("mask",), picture=None)
def test_blockwise_gradients(loaded, draw, settings):
    """Gradients for Q, K and V through the blocks match those of the reference's attention."""
    B, H, T_q, d_k, d_v = draw.sizes(5)
    T_k = draw.integer(13, 40)
    Q, K, V = draw.normal(B, H, T_q, d_k), draw.normal(B, H, T_k, d_k), draw.normal(B, H, T_k, d_v)
    mask = draw.mask(B, 1, T_q, T_k)
    grad_output = draw.normal(B, H, T_q, d_v)
    tolerance = settings.tolerance("float64", gradient=True)
    inputs = [x.clone().requires_grad_(True) for x in (Q, K, V)]
    expected = torch.autograd.grad(ref.scaled_dot_product_attention(*inputs, mask)[0], inputs, grad_output)
    held = Cases()
    for block_size in _block_sizes(draw, T_q, T_k):
        reply = loaded.run(FUNCTION, Q, K, V, mask, False, block_size, grad=[0, 1, 2], grad_outputs=[grad_output])
        for name, got, want in zip("QKV", reply.grads, expected):
            with held:
                what = f"the gradient for {name} (block_size={block_size})"
                expect_tensor(got, want, what=what, tolerance=tolerance)
    held.done()


@pytest.mark.check(function="blockwise_attention", category="no-mutation", points=1, exercises=("mask",), picture=None)
def test_blockwise_no_mutation(loaded, draw, settings):
    """Q, K, V and the mask are left as they were."""
    B, T_q, d_k, d_v = draw.sizes(4)
    T_k = draw.integer(13, 40)
    args = (draw.normal(B, T_q, d_k), draw.normal(B, T_k, d_k), draw.normal(B, T_k, d_v), draw.mask(B, T_q, T_k))
    for block_size in _block_sizes(draw, T_q, T_k):
        reply = loaded.run(FUNCTION, *args, False, block_size)
        names = [name for name, changed in zip(("Q", "K", "V", "mask"), reply.mutated) if changed]
        if names:
            fail(
                f"blockwise_attention modified {', '.join(names)} in place (block_size={block_size}); use"
                " out-of-place operations"
            )


def _measured(loaded, label: str, Q, K, V, mask=None, is_causal=False):
    """The memory the student's call created, as the worker measured it (not as the student says), for a call that
    returned an output of the right shape: whether its values are right is the value checks' to say (this check is
    withheld until blockwise_matches_torch passes)."""
    block_size = MEMORY_SHAPE["block_size"]
    reply = loaded.run(FUNCTION, Q, K, V, mask, is_causal, block_size, memory=True)
    shape = (*Q.shape[:-1], V.size(-1))  # no leading axes come from the mask here: it is (T_q, T_k)
    if not (isinstance(reply.value, torch.Tensor) and tuple(reply.value.shape) == shape):
        fail(f"blockwise_attention {label}: expected an output of shape {shape} to measure")
    return reply.memory


@pytest.mark.check(function="blockwise_attention", category="memory", points=2, exercises=(), picture=None)
def test_blockwise_memory(loaded, draw, settings, source, shown):
    """Never creates a tensor of T_q x T_k elements per (batch, head), and holds at most a few times T_q x (d_k + d_v +
    block_size) elements at once: measured in the grader's worker, with T_q = 32, T_k = 256, block_size = 16.

    Floating-point tensors count (the scores, the weights, the running sums); boolean masks do not (a caller may hand
    in a full one). A source that reaches torch's internals (where the measure runs) is not vouched for.
    """
    reach = dynamic_reach(source)
    if reach:
        fail(
            f"blockwise_attention's memory is not vouched for: {shown} reaches into torch's internals, where the"
            f" grader measures it ({'; '.join(reach[:3])})"
        )
    T_q, T_k, d_k, d_v, block_size = MEMORY_SHAPE.values()
    units = T_q * (d_k + d_v + block_size)
    held = Cases()
    for lead in ((), (2, 3)):
        per = math.prod(lead)  # batches and heads
        Q, K, V = (draw.normal(*lead, T, d, dtype=torch.float32) for T, d in ((T_q, d_k), (T_k, d_k), (T_k, d_v)))
        for label, mask, is_causal in (
            ("without a mask", None, False),
            ("with is_causal=True", None, True),
            ("with a (T_q, T_k) mask", draw.mask(T_q, T_k), False),
        ):
            where = f"{label}, on inputs of shape {tuple(Q.shape)} and {tuple(K.shape)}, block_size={block_size}"
            memory = _measured(loaded, where, Q, K, V, mask, is_causal)
            with held:
                if memory.largest >= per * T_q * T_k:
                    fail(
                        f"blockwise_attention {where} created a tensor of {memory.largest} elements (first seen as"
                        f" shape {tuple(memory.shape)}, by {memory.op}): as many as the whole (T_q, T_k) matrix of"
                        f" scores, {T_q} x {T_k}",
                        hint="compute the scores of one block of keys at a time, (T_q, block_size), and keep only the"
                        " running maximum, sum and output between blocks",
                    )
                itemsize = Q.element_size()
                allowed = PEAK_UNITS * per * units * itemsize
                if memory.peak_bytes > allowed:
                    fail(
                        f"blockwise_attention {where} held {memory.peak_bytes} bytes of tensors at once; allowed:"
                        f" {allowed} ({PEAK_UNITS} x T_q x (d_k + d_v + block_size) values per batch and head); its"
                        f" largest tensor: shape {tuple(memory.shape)}, by {memory.op}",
                        hint="keep only the running maximum, sum and output between blocks, let each block's scores"
                        " go before the next block, and slice K and V per block instead of copying them whole",
                    )
    held.done()


@pytest.mark.check(function="blockwise_attention", category="integrity", points=1, exercises=(), picture=None)
def test_integrity_blockwise(loaded, draw, settings):
    """No fused attention ran during its calls, and it did not call your scaled_dot_product_attention, or your
    masked_softmax on all the keys at once: the point is the running softmax.

    Runs after the part's other checks, and sees the ops of all their calls. A flag: listed for review.
    """
    T_q, T_k, d_k, d_v, block_size = MEMORY_SHAPE.values()
    Q, K, V = (draw.normal(T, d, dtype=torch.float32) for T, d in ((T_q, d_k), (T_k, d_k), (T_k, d_v)))
    reply = loaded.run(FUNCTION, Q, K, V, draw.mask(T_q, T_k), False, block_size, memory=True)
    ran = sorted(loaded.ops.get(FUNCTION, ()))
    if ran:
        flag(
            f"blockwise_attention ran PyTorch's fused attention ({', '.join(ran[:3])}); the assignment is to write"
            " the running softmax yourself",
            "fused_ran",
        )
    whole = [name for name in ("scaled_dot_product_attention", "masked_softmax") if name in reply.entered]
    if "scaled_dot_product_attention" in whole or (whole and reply.memory.largest >= T_q * T_k):
        flag(
            f"blockwise_attention called your {whole[0]} on all {T_k} keys at once; the assignment is to compute"
            " the softmax block by block, with a running maximum and sum",
            "whole_softmax",
        )
