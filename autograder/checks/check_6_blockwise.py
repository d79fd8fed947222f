"""blockwise_attention (an optional part: [parts] blockwise_attention): attention over blocks of keys with a running
maximum, sum and output, graded for its values, stability, gradients, integrity and the memory it creates."""

import math

import pytest
import torch
import torch.nn.functional as F

from autograder.checks.expect import Cases, attention_size, dtype_name, edge_case, expect_tensor, fail
from autograder.checks.flags import flag
from autograder.checks.mistakes import blockwise_variants
from reference import attention as ref

FUNCTION = "blockwise_attention"
# the integrity check's inputs: many more keys than a block, so that calling the whole softmax shows in its record
MEMORY_SHAPE = {"T_q": 32, "T_k": 256, "d_k": 8, "d_v": 8, "block_size": 16}
# the memory check draws its sizes afresh on every grading, so large that the (T_q, T_k) matrix of float32 scores is
# 28 to 32 MiB per call: tens of MiB above what a blockwise call takes (the reference: 1 to 7 MiB above its inputs),
# and far above the allocator's noise
MEMORY_QUERIES = (960, 1024)  # T_q x batches x heads
MEMORY_KEYS = (7680, 8192)  # T_k
MEMORY_LEADS = ((), (2,), (1, 2))  # leading shapes (batches, heads), one drawn per call
MEMORY_BLOCKS = (64, 128)
MEMORY_ROWS = 32  # queries whose outputs are compared, drawn per call
# what a call may take above its inputs: this share of the (T_q, T_k) matrix of its dtype. Half is 14 to 16 MiB: over
# twice the most the reference and the chunked port took above their inputs in 120 draws (6.4 MiB), under half the
# least a full-matrix attack took (30.1 MiB; docs/performance.md, "The memory check's margins")
MATRIX_SHARE = 2


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


def _mib(count: int) -> str:
    return f"{count / 2**20:.1f} MiB"


@pytest.mark.check(function="blockwise_attention", category="memory", points=2, exercises=(), picture=None)
def test_blockwise_memory(loaded, draw, settings):
    """Takes far less memory than the (T_q, T_k) matrix of scores: the grader measures the whole worker process from
    outside it (how far its resident set rose while the call ran, how much of its memory the call read or wrote,
    wherever that memory was taken, how many pages the kernel gave the sandbox or took back from it while the call
    ran, files in memory included, and the most kernel memory the sandbox held, pipe and socket buffers included: every
    thread, every library, numpy included, every dtype), on inputs drawn afresh with T_k in the thousands, without a
    mask, with is_causal=True and with a (T_q, T_k) mask. A call may take its inputs and half that matrix besides (a
    call over it is measured again on inputs drawn afresh, and fails only if over it again); its outputs must be right
    too.
    """
    held = Cases()
    # first a call of the value checks' sizes, measured as every call is (nothing tells it from theirs): what the
    # student's code imports or builds once, on its first call in a worker restarted since, is not charged to the next
    B, T_q, d_k, d_v = draw.sizes(4)
    T_k = draw.integer(13, 40)
    Q, K, V = draw.normal(B, T_q, d_k), draw.normal(B, T_k, d_k), draw.normal(B, T_k, d_v)
    with held:
        _compare(loaded, settings, "without a mask", Q, K, V, block_size=_block_sizes(draw, T_q, T_k)[1])
    for label, masked, is_causal in (
        ("without a mask", False, False),
        ("with is_causal=True", False, True),
        ("with a (T_q, T_k) mask", True, False),
    ):
        with held:
            # over its allowance once, measured again on inputs drawn afresh, and failed only if over it again: a
            # full-matrix call is over it on every draw, and an honest call's rare excess (the allocator's) is not
            # repeated (docs/performance.md, "The memory check's margins")
            if _measure(loaded, draw, settings, label, masked, is_causal):
                _measure(loaded, draw, settings, label, masked, is_causal, again=True)
    held.done()


def _measure(loaded, draw, settings, label: str, masked: bool, is_causal: bool, again: bool = False) -> bool:
    """One call on inputs drawn here: the outputs of some queries, drawn, compared with torch's, and the memory the
    call's process took or touched while it ran, as the grader measured it from outside the worker
    (``reply.grown_bytes``, ``reply.touched_bytes``, ``reply.charged_bytes``, ``reply.kernel_bytes``), against its
    inputs and a share of the matrix. True where it was over that allowance (the first time; ``again``: fails
    instead)."""
    lead = MEMORY_LEADS[draw.integer(0, len(MEMORY_LEADS) - 1)]
    per = math.prod(lead)  # batches and heads
    T_q, T_k = draw.integer(*MEMORY_QUERIES) // per, draw.integer(*MEMORY_KEYS)
    d_k, d_v = draw.sizes(2, low=8, high=16)
    block_size = draw.integer(*MEMORY_BLOCKS)
    Q, K, V = (draw.normal(*lead, T, d, dtype=torch.float32) for T, d in ((T_q, d_k), (T_k, d_k), (T_k, d_v)))
    mask = draw.mask(T_q, T_k) if masked else None
    where = f"{label}, on inputs of shape {tuple(Q.shape)} and {tuple(K.shape)}, block_size={block_size}"
    reply = loaded.run(FUNCTION, Q, K, V, mask, is_causal, block_size, pages=True)
    if not reply.ok:
        fail(f"blockwise_attention {where} failed: {reply.describe()}")
    rows = torch.randperm(T_q, generator=draw.generator)[:MEMORY_ROWS].sort().values
    allowed = torch.arange(T_k) <= rows[:, None] if is_causal else torch.ones(len(rows), T_k, dtype=torch.bool)
    if mask is not None:
        allowed = allowed & mask[rows]
    shape = (*Q.shape[:-1], V.size(-1))
    if not (isinstance(reply.value, torch.Tensor) and tuple(reply.value.shape) == shape):
        found = tuple(reply.value.shape) if isinstance(reply.value, torch.Tensor) else type(reply.value).__name__
        fail(f"blockwise_attention {where} returned {found}; expected an output of shape {shape}")
    size = attention_size(Q, K, V)
    expect_tensor(
        reply.value[..., rows, :],
        _oracle(Q[..., rows, :], K, V, allowed).to(Q.dtype),
        what=f"blockwise_attention's output {where}",
        tolerance=settings.tolerance(dtype_name(Q.dtype), scale=size),
        scale=size,
    )
    if reply.grown_bytes is None:  # the grader's own limit, never the student's lost points
        raise RuntimeError(f"the grader could not measure blockwise_attention's memory: {reply.unmeasured}")
    if reply.ran_processes:
        fail(
            f"blockwise_attention {where} ran another process that ended during the call (os.fork, multiprocessing):"
            " the grader measures the memory of the processes it can still read when the call returns, so this"
            " call's memory could not be measured",
            hint="compute the attention in the function's own process, one block of keys at a time",
        )
    matrix = math.prod(Q.shape[:-1]) * T_k * Q.element_size()
    inputs = sum(x.numel() * x.element_size() for x in (Q, K, V, mask) if x is not None)
    budget = inputs + matrix // MATRIX_SHARE
    touched = reply.touched_bytes or 0  # None: a runner that counts no pages (a test's, tests/in_process.py)
    charged = reply.charged_bytes or 0  # None: no memory cgroup that counts its pages (cgroup v2, or none)
    kernel = reply.kernel_bytes or 0  # None: no memory cgroup that counts its kernel memory (cgroup v2, or none)
    used = max(reply.grown_bytes, touched, charged, kernel)
    if used <= budget:
        return False
    if not again:
        return True
    record = reply.memory
    largest = (
        f"; the largest tensor its torch ops made: shape {tuple(record.shape)}, by {record.op}"
        if record is not None and record.largest
        else ""
    )
    fail(
        f"blockwise_attention {where} took {_mib(used)} of memory while it ran (the grader's measure of the whole"
        f" process: every thread and library): its memory rose {_mib(reply.grown_bytes)}, it read or wrote"
        f" {_mib(touched)}, wherever that memory was taken, the kernel gave its sandbox or took back"
        f" {_mib(charged)} of pages (files in memory included), and its sandbox held up to {_mib(kernel)} of kernel"
        f" memory (pipe and socket buffers included); allowed: {_mib(budget)}, its inputs and half"
        f" the (T_q, T_k) matrix of scores, which is {_mib(matrix)}{largest}; the same on inputs drawn before these",
        hint="compute the scores of one block of keys at a time, (T_q, block_size), keep only the running maximum,"
        " sum and output between blocks, and let each block go before the next",
    )
    return True


@pytest.mark.check(function="blockwise_attention", category="integrity", points=1, exercises=(), picture=None)
def test_integrity_blockwise(loaded, draw, settings):
    """No fused attention ran during its calls, and it did not call your scaled_dot_product_attention, or your
    masked_softmax on all the keys at once: the point is the running softmax.

    Runs after the part's other checks, and sees the ops of all their calls. A flag: listed for review.
    """
    T_q, T_k, d_k, d_v, block_size = MEMORY_SHAPE.values()
    Q, K, V = (draw.normal(T, d, dtype=torch.float32) for T, d in ((T_q, d_k), (T_k, d_k), (T_k, d_v)))
    reply = loaded.run(FUNCTION, Q, K, V, draw.mask(T_q, T_k), False, block_size)
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
