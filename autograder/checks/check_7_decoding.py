"""grouped_query_attention, KVCache and attend_with_cache (an optional part: [parts] decoding): attention as a language
model decodes, one token or chunk at a time against a cache of past keys and values, with key/value heads shared by
groups of query heads. Graded against F.scaled_dot_product_attention(..., enable_gqa=True) and the full causal pass.

The part builds on the student's own attention: whether a failure builds on the student's own
scaled_dot_product_attention (for grouped_query_attention), or grouped_query_attention or KVCache (for
attend_with_cache), is decided outside these checks, as for every function, by running the check again with it
answered by the reference (checks/substitution.py; the class KVCache by replaying each object's calls on the
reference's class)."""

import math

import pytest
import torch
import torch.nn.functional as F

from autograder.checks.expect import (
    Cases,
    attention_size,
    dtype_name,
    edge_case,
    expect_tensor,
    fail,
)
from autograder.checks.flags import flag
from autograder.checks.mistakes import decoding_variants, gqa_variants
from autograder.checks.student import StudentFault
from reference import attention as ref

GQA, CACHE, DECODE, SDPA = "grouped_query_attention", "KVCache", "attend_with_cache", "scaled_dot_product_attention"
# F.scaled_dot_product_attention shares key/value heads itself from torch 2.5 (enable_gqa); before, the oracle repeats
# them as the documentation of enable_gqa says it does
ENABLE_GQA = torch.torch_version.TorchVersion(torch.__version__) >= (2, 5)


def _shared(x, H: int):
    """Key/value heads given to their groups of query heads: (..., H_kv, T, d) -> (..., H, T, d)."""
    return x.repeat_interleave(H // x.size(-3), dim=-3)


def _causal(T_q: int, T_k: int, bottom_right: bool = False):
    """The causal mask, aligned top-left (is_causal=True) or bottom-right (decoding): (T_q, T_k) bool."""
    return torch.ones(T_q, T_k, dtype=torch.bool).tril(T_k - T_q if bottom_right else 0)


def _oracle(Q, K, V, mask=None):
    """(output, weights) in float64: the output F.scaled_dot_product_attention's with enable_gqa, the weights
    torch.softmax's over the masked scores (torch returns none); a row with no allowed key all zeros."""
    Q, K, V = Q.double(), K.double(), V.double()
    if ENABLE_GQA:
        output = F.scaled_dot_product_attention(Q, K, V, attn_mask=mask, enable_gqa=True)
    else:
        output = F.scaled_dot_product_attention(Q, _shared(K, Q.size(-3)), _shared(V, Q.size(-3)), attn_mask=mask)
    scores = Q @ _shared(K, Q.size(-3)).transpose(-2, -1) / math.sqrt(Q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, -math.inf)
    weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)
    if mask is not None:
        allowed = mask.expand(*weights.shape).any(dim=-1, keepdim=True)
        output = torch.where(allowed, output, torch.zeros_like(output))
    return output, weights


def _both(mask, causal):
    return causal if mask is None else mask & causal


def _size(Q, K, V) -> float:
    return attention_size(Q, _shared(K, Q.size(-3)), _shared(V, Q.size(-3)))


# --- grouped_query_attention: built on the student's scaled_dot_product_attention ---


def _gqa_run(loaded, settings, Q, K, V, mask, is_causal, **options):
    """The student's grouped_query_attention's reply."""
    reply = loaded.run(GQA, Q, K, V, mask, is_causal, **options)
    if len(reply.value) != 2:
        fail(f"grouped_query_attention returned {len(reply.value)} values; expected (output, weights)")
    return reply


def _compare_gqa(loaded, settings, label, Q, K, V, mask=None, is_causal=False):
    """The student's (output, weights) against the oracle's, the output first (a wrong grouping shows in both)."""
    size = _size(Q, K, V)
    tolerance = settings.tolerance(dtype_name(Q.dtype), scale=size)
    full = _both(mask, _causal(Q.size(-2), K.size(-2))) if is_causal else mask
    expected = tuple(x.to(Q.dtype) for x in _oracle(Q, K, V, full))
    reply = _gqa_run(loaded, settings, Q, K, V, mask, is_causal)
    variants = gqa_variants(Q, K, V, mask, is_causal)
    for index, name in enumerate(("output", "weights")):
        expect_tensor(
            reply.value[index],
            expected[index],
            what=f"grouped_query_attention's {name} {label}",
            tolerance=tolerance,
            variants={mistake: wrong[index] for mistake, wrong in variants.items()},
            scale=size,
        )


def _heads(draw, kind: str) -> tuple[int, int]:
    """(H, H_kv) for a kind of sharing: each key/value head for 2 or 4 query heads, one per query head, or one for
    all of them (multi-query)."""
    H_kv = draw.integer(2, 3)
    return {
        "two": (2 * H_kv, H_kv),
        "four": (4 * H_kv, H_kv),
        "one": (H_kv, H_kv),
        "all": (draw.integer(3, 6), 1),
    }[kind]


@pytest.mark.check(
    function="grouped_query_attention", category="matches-torch", points=3, exercises=("mask", "causal"), picture=None
)
def test_gqa_matches_torch(loaded, draw, settings):
    """Agrees with F.scaled_dot_product_attention(..., enable_gqa=True) for H / H_kv of 1, 2, 4 and H (multi-query),
    without a mask, with masks whose head axis is 1 and H, and with is_causal=True; T_q != T_k, float64 and float32,
    with no, one and two leading axes before the heads."""
    B, T_q, T_k, d_k, d_v = draw.sizes(5)
    held = Cases()
    for kind, masked in (("two", None), ("four", "one"), ("one", "every"), ("all", "one"), ("two", "every")):
        H, H_kv = _heads(draw, kind)
        Q, K, V = draw.normal(B, H, T_q, d_k), draw.normal(B, H_kv, T_k, d_k), draw.normal(B, H_kv, T_k, d_v)
        mask = {None: None, "one": draw.mask(B, 1, T_q, T_k), "every": draw.mask(B, H, T_q, T_k)}[masked]
        label = f"with H={H}, H_kv={H_kv}" + (f", a mask of shape {tuple(mask.shape)}" if mask is not None else "")
        with held:
            _compare_gqa(loaded, settings, label, Q, K, V, mask)
    H, H_kv = _heads(draw, "four")
    Q, K, V = draw.normal(B, H, T_q, d_k), draw.normal(B, H_kv, T_k, d_k), draw.normal(B, H_kv, T_k, d_v)
    with held:
        _compare_gqa(loaded, settings, f"with H={H}, H_kv={H_kv}, is_causal=True", Q, K, V, is_causal=True)
    with held:
        mask = draw.mask(T_q, T_k)
        label = f"in float32, with H={H}, H_kv={H_kv} and a (T_q, T_k) mask"
        _compare_gqa(loaded, settings, label, Q.float(), K.float(), V.float(), mask)
    with held, edge_case():
        label = f"on (H, T, d) inputs, H={H}, H_kv={H_kv}"
        _compare_gqa(loaded, settings, label, Q[0], K[0], V[0])
    with held:
        extra = (2, *Q.shape)
        Q5 = draw.normal(*extra)
        K5, V5 = draw.normal(2, *K.shape), draw.normal(2, *V.shape)
        _compare_gqa(loaded, settings, f"with two leading axes, H={H}, H_kv={H_kv}", Q5, K5, V5)
    held.done()


@pytest.mark.check(function="grouped_query_attention", category="shape", points=1, exercises=(), picture=None)
def test_gqa_heads_checked(loaded, draw, settings):
    """Query heads that are not a multiple of the key/value heads raise a ValueError whose message names both."""
    B, T, d = draw.sizes(3)
    H_kv = draw.integer(4, 5)
    H = H_kv + draw.integer(1, H_kv - 1)  # between H_kv and 2 H_kv: no multiple
    Q, K, V = draw.normal(B, H, T, d), draw.normal(B, H_kv, T, d), draw.normal(B, H_kv, T, d)
    try:
        loaded.grouped_query_attention(Q, K, V)
    except StudentFault as fault:
        if fault.error != "ValueError":
            raise
        message = str(fault)
        if not all(f"{count}" in message for count in (H, H_kv)):
            fail(f"grouped_query_attention with H={H}, H_kv={H_kv} raised a ValueError that names not both: {message}")
        return
    fail(
        f"grouped_query_attention with H={H} query heads and H_kv={H_kv} key/value heads returned a result",
        hint="H must be a multiple of H_kv: check it first, and raise a ValueError naming both",
    )


@pytest.mark.check(function="grouped_query_attention", category="gradient", points=2, exercises=("mask",), picture=None)
def test_gqa_gradients(loaded, draw, settings):
    """Gradients for Q, K and V match those of F.scaled_dot_product_attention(..., enable_gqa=True): each key/value
    head gathers the gradients of its whole group of query heads."""
    B, T_q, T_k, d_k, d_v = draw.sizes(5)
    H, H_kv = _heads(draw, "two")
    Q, K, V = draw.normal(B, H, T_q, d_k), draw.normal(B, H_kv, T_k, d_k), draw.normal(B, H_kv, T_k, d_v)
    mask = draw.mask(B, 1, T_q, T_k)
    grad_output = draw.normal(B, H, T_q, d_v)
    tolerance = settings.tolerance("float64", gradient=True)
    inputs = [x.clone().requires_grad_(True) for x in (Q, K, V)]
    expected = torch.autograd.grad(_oracle(*inputs, mask)[0], inputs, grad_output)
    zero = torch.zeros(B, H, T_q, T_k, dtype=Q.dtype)  # the weights' gradient: the output's alone is checked
    reply = _gqa_run(loaded, settings, Q, K, V, mask, False, grad=[0, 1, 2], grad_outputs=[grad_output, zero])
    for name, got, want in zip("QKV", reply.grads, expected):
        expect_tensor(got, want, what=f"the gradient for {name} (H={H}, H_kv={H_kv})", tolerance=tolerance)


@pytest.mark.check(
    function="grouped_query_attention", category="no-mutation", points=1, exercises=("mask",), picture=None
)
def test_gqa_no_mutation(loaded, draw, settings):
    """Q, K, V and the mask are left as they were."""
    B, T_q, T_k, d = draw.sizes(4)
    H, H_kv = _heads(draw, "two")
    args = (draw.normal(B, H, T_q, d), draw.normal(B, H_kv, T_k, d), draw.normal(B, H_kv, T_k, d))
    reply = _gqa_run(loaded, settings, *args, draw.mask(B, 1, T_q, T_k), True)
    names = [name for name, changed in zip(("Q", "K", "V", "mask"), reply.mutated) if changed]
    if names:
        fail(f"grouped_query_attention modified {', '.join(names)} in place; use out-of-place operations")


# --- KVCache ---


def _appends(loaded, max_len: int, K, V, chunks: list[int]):
    """The student's cache made with ``max_len``, given ``chunks`` positions of K and V in turn: per append
    [(K_all, V_all), len(cache)]."""
    args, steps, start = [], [], 0
    for size in chunks:
        args += [K[..., start : start + size, :], V[..., start : start + size, :]]
        steps.append({"method": "append", "args": [len(args) - 2, len(args) - 1]})
        start += size
    return loaded.session(CACHE, (CACHE, max_len), steps, *args)


@pytest.mark.check(function="KVCache", category="shape", points=2, exercises=(), picture=None)
def test_kvcache_append(loaded, draw, settings):
    """append adds positions on the time axis (-2) and returns every key and value cached so far, oldest first, and
    len(cache) counts them: chunks of 2 positions on (B, H_kv, T, d) tensors, of 1, 3 and 2 on (H_kv, T, d) ones."""
    B, H_kv, d_k, d_v = draw.sizes(4)
    held = Cases()
    for lead, chunks in (((B, H_kv), [2, 2, 2]), ((H_kv,), [1, 3, 2])):
        T = sum(chunks)
        K, V = draw.normal(*lead, T, d_k), draw.normal(*lead, T, d_v)
        results, _ = _appends(loaded, T + draw.integer(0, 2), K, V, chunks)
        stop = 0
        for index, (size, ((K_all, V_all), length)) in enumerate(zip(chunks, results)):
            stop += size
            where = f"after append number {index + 1} of {chunks} positions to (*{lead}, T, d) tensors"
            starts = [sum(chunks[:i]) for i in range(index + 1)]
            pieces = [(K[..., a : a + s, :], V[..., a : a + s, :]) for a, s in zip(starts, chunks)]
            with held:
                for name, got, want, part in (("keys", K_all, K, 0), ("values", V_all, V, 1)):
                    same = len({piece[part].size(-2) for piece in pieces}) == 1  # chunks of one size: they fit
                    grown = torch.cat([piece[part] for piece in pieces], dim=-3) if index and same else None
                    expect_tensor(
                        got,
                        want[..., :stop, :],
                        what=f"the cached {name} {where}",
                        tolerance=(0.0, 0.0),
                        variants={"cache_head_axis": grown} if grown is not None else {},
                    )
                if length != stop:
                    fail(f"len(cache) {where}: {length}, expected {stop}")
    held.done()


@pytest.mark.check(function="KVCache", category="values", points=1, exercises=(), picture=None)
def test_kvcache_cap(loaded, draw, settings):
    """A cache filled to max_len exactly takes every position; one position more raises a ValueError, and so does a
    chunk that would go past max_len from a cache not yet full."""
    B, H_kv, d = draw.sizes(3)
    max_len = draw.integer(4, 9)
    K, V = draw.normal(B, H_kv, max_len + 1, d), draw.normal(B, H_kv, max_len + 1, d)
    _appends(loaded, max_len, K, V, [max_len - 1, 1])
    for chunks in ([max_len - 1, 1, 1], [max_len - 1, 2]):
        where = f"KVCache({max_len}) given chunks of {chunks} positions"
        try:
            _appends(loaded, max_len, K, V, chunks)
        except StudentFault as fault:
            if fault.error != "ValueError":
                fail(f"{where}: {fault}; expected a ValueError", hint="raise ValueError when max_len would be passed")
            continue
        fail(f"{where}: the last append returned, past max_len", "cache_no_cap")


# --- attend_with_cache: built on the student's grouped_query_attention ---


def _decode(loaded, Q, K, V, chunks, prefix=0, mask=None, grad_outputs=None):
    """The student's attend_with_cache over the queries Q fed in ``chunks``, after ``prefix`` positions of K and V
    appended to a fresh KVCache that holds exactly what comes (``mask``: for a single chunk). Returns each step's
    (output, weights) and the reply; with ``grad_outputs`` (per step, the output's and the weights' gradients), the
    reply's gradients are those of every step's Q, K and V, in that order."""
    args, steps = [], []
    if prefix:
        args += [K[..., :prefix, :], V[..., :prefix, :]]
        steps.append({"method": "append", "args": [0, 1]})
    start = prefix
    for size in chunks:
        args += [Q[..., start - prefix : start - prefix + size, :], K[..., start : start + size, :]]
        args.append(V[..., start : start + size, :])
        steps.append({"function": DECODE, "args": [len(args) - 3, len(args) - 2, len(args) - 1, "object"]})
        start += size
    if mask is not None:
        args.append(mask)
        steps[-1]["kwargs"] = {"mask": len(args) - 1}
    options = {}
    if grad_outputs is not None:
        options = {"grad": list(range(len(args))), "grad_outputs": [g for pair in grad_outputs for g in pair]}
    results, reply = loaded.session(DECODE, (CACHE, start), steps, *args, **options)
    return [value for value, _ in results[1 if prefix else 0 :]], reply


def _decode_run(loaded, settings, Q, K, V, chunks, prefix=0, mask=None, grad_outputs=None):
    """``_decode``'s steps and reply."""
    return _decode(loaded, Q, K, V, chunks, prefix, mask, grad_outputs)


def _compare_decoding(loaded, settings, label, Q, K, V, chunks, prefix=0, mask=None):
    """The steps' outputs, joined, and each step's weights against the whole pass's rows (F.scaled_dot_product_attention
    with enable_gqa and the causal mask aligned bottom-right)."""
    size = _size(Q, K, V)
    tolerance = settings.tolerance(dtype_name(Q.dtype), scale=size)
    output, weights = _oracle(Q, K, V, _both(mask, _causal(Q.size(-2), prefix + sum(chunks), bottom_right=True)))
    steps, reply = _decode_run(loaded, settings, Q, K, V, chunks, prefix, mask)
    variants = decoding_variants(Q, K, V, chunks, prefix, mask)
    expect_tensor(
        torch.cat([out for out, _ in steps], dim=-2),
        output.to(Q.dtype),
        what=f"attend_with_cache's outputs {label}, joined",
        tolerance=tolerance,
        variants={name: wrong for name, (wrong, _) in variants.items()},
        scale=size,
    )
    start = 0
    for index, (chunk, (_, got)) in enumerate(zip(chunks, steps)):
        stop = start + chunk
        expect_tensor(
            got,
            weights[..., start:stop, : prefix + stop].to(Q.dtype),
            what=f"attend_with_cache's weights {label}, step {index + 1}",
            tolerance=tolerance,
            variants={name: each[index] for name, (_, each) in variants.items()},
            scale=size,
        )
        start = stop


@pytest.mark.check(function="attend_with_cache", category="causal", points=3, exercises=("causal",), picture=None)
def test_decoding_matches_full_pass(loaded, draw, settings):
    """Fed one position at a time, two at a time, or in chunks whose size does not divide the length, the steps'
    outputs and weights are those of the whole sequence's causal pass (F.scaled_dot_product_attention with
    is_causal=True and enable_gqa=True): grouped heads, multi-query, float64 and float32."""
    B, d_k, d_v = draw.sizes(3)
    T = draw.integer(7, 12)
    odd = next(size for size in range(3, T) if T % size)
    held = Cases()
    for kind, chunk, dtype in (("two", 1, torch.float64), ("all", 2, torch.float64), ("four", odd, torch.float32)):
        H, H_kv = _heads(draw, kind)
        Q, K, V = (draw.normal(B, heads, T, d, dtype=dtype) for heads, d in ((H, d_k), (H_kv, d_k), (H_kv, d_v)))
        chunks = [chunk] * (T // chunk) + ([T % chunk] if T % chunk else [])
        with held:
            label = f"in chunks of {chunk} ({T} positions, H={H}, H_kv={H_kv}, {dtype_name(dtype)})"
            _compare_decoding(loaded, settings, label, Q, K, V, chunks)
    held.done()


@pytest.mark.check(
    function="attend_with_cache", category="causal", points=2, exercises=("mask", "causal"), picture=None
)
def test_decoding_alignment(loaded, draw, settings):
    """With P positions already cached, T_new < P + T_new new queries are aligned bottom-right (new query i sees keys
    0, ..., P + i, as torch.nn.attention.bias.causal_lower_right): a single new query (which sees every key), a few,
    and a few with a padding mask whose head axis is 1."""
    B, d_k, d_v = draw.sizes(3)
    H, H_kv = _heads(draw, "two")
    P, T_new = draw.integer(4, 9), draw.integer(2, 3)
    held = Cases()
    for new, padded in ((1, False), (T_new, False), (T_new, True)):
        T = P + new
        Q, K, V = draw.normal(B, H, new, d_k), draw.normal(B, H_kv, T, d_k), draw.normal(B, H_kv, T, d_v)
        mask = ref.padding_mask(draw.lengths(B, T), T)[:, None] if padded else None  # (B, 1, 1, T)
        with held:
            label = f"for {new} new queries after {P} cached positions" + (" with a padding mask" if padded else "")
            _compare_decoding(loaded, settings, label, Q, K, V, [new], P, mask)
    held.done()


@pytest.mark.check(function="attend_with_cache", category="gradient", points=2, exercises=("causal",), picture=None)
def test_decoding_gradients(loaded, draw, settings):
    """Decoding two positions at a time, the gradients for every step's queries, keys and values (through the cache)
    are those of the whole sequence's causal pass."""
    B, d_k, d_v = draw.sizes(3)
    H, H_kv = _heads(draw, "two")
    T = draw.integer(5, 9)
    chunks = [2] * (T // 2) + [1] * (T % 2)
    Q, K, V = draw.normal(B, H, T, d_k), draw.normal(B, H_kv, T, d_k), draw.normal(B, H_kv, T, d_v)
    grad_output = draw.normal(B, H, T, d_v)
    pairs, start = [], 0
    for size in chunks:
        pairs.append((grad_output[..., start : start + size, :], torch.zeros(B, H, size, start + size, dtype=Q.dtype)))
        start += size
    tolerance = settings.tolerance("float64", gradient=True)
    inputs = [x.clone().requires_grad_(True) for x in (Q, K, V)]
    expected = torch.autograd.grad(_oracle(*inputs, _causal(T, T))[0], inputs, grad_output)
    _, reply = _decode_run(loaded, settings, Q, K, V, chunks, grad_outputs=pairs)
    got = [torch.cat(reply.grads[index::3], dim=-2) for index in range(3)]  # each step's (Q, K, V), joined
    for name, mine, want in zip("QKV", got, expected):
        expect_tensor(mine, want, what=f"the gradient for {name}, decoding in chunks of 2", tolerance=tolerance)


@pytest.mark.check(function="attend_with_cache", category="no-mutation", points=1, exercises=("mask",), picture=None)
def test_decoding_no_mutation(loaded, draw, settings):
    """The queries, keys, values and mask handed to KVCache.append and attend_with_cache are left as they were."""
    B, d_k, d_v = draw.sizes(3)
    H, H_kv = _heads(draw, "two")
    P, T_new = draw.integer(2, 5), 2
    T = P + T_new
    Q, K, V = draw.normal(B, H, T_new, d_k), draw.normal(B, H_kv, T, d_k), draw.normal(B, H_kv, T, d_v)
    _, reply = _decode_run(loaded, settings, Q, K, V, [T_new], P, draw.mask(B, 1, T_new, T))
    names = ["the cached keys", "the cached values", "Q_new", "K_new", "V_new", "mask"]
    changed = [name for name, mutated in zip(names, reply.mutated) if mutated]
    if changed:
        fail(f"decoding modified {', '.join(changed)} in place; use out-of-place operations (torch.cat)")


@pytest.mark.check(function="grouped_query_attention", category="integrity", points=1, exercises=(), picture=None)
def test_integrity_decoding(loaded, draw, settings):
    """No fused attention ran during the part's calls (F.scaled_dot_product_attention with enable_gqa included): the
    part builds on your own scaled_dot_product_attention.

    Runs after the part's other checks, and sees the ops of all their calls. A flag: listed for review.
    """
    ran = sorted(set(loaded.ops.get(GQA, ())) | set(loaded.ops.get(DECODE, ())) | set(loaded.ops.get(CACHE, ())))
    if ran:
        flag(
            f"the decoding part ran PyTorch's fused attention ({', '.join(ran[:3])}); the assignment is to build it"
            " on your own scaled_dot_product_attention",
            "fused_ran",
        )
