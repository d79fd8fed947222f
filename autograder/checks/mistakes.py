"""The classic mistakes, as known-wrong variants of the reference, and the sentence that names each.

A check computes the variants on its own inputs, in the trusted process; when the student's
output matches one of them and not the reference, the feedback names that mistake.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from reference import attention as ref

SENTENCES = {
    "no_scale": "you did not divide the scores by sqrt(d_k); reread 'Why scale?' in the handout",
    "divide_by_dk": "you divided by d_k, not by sqrt(d_k); reread 'Why scale?' in the handout",
    "multiply_by_sqrt": "you multiplied by sqrt(d_k) instead of dividing; reread 'Why scale?' in the handout",
    "query_axis": "the softmax runs over the query axis (dim=-2), not over the keys (dim=-1); reread 'The formula'",
    "mask_inverted": "the mask's polarity is inverted: True means 'may attend'; reread 'Masks'",
    "zero_fill": "masked scores were set to 0 instead of -inf, so masked keys still get weight; reread 'Masks'",
    "mask_after_softmax": "the mask was applied after the softmax, so the weights no longer sum to 1; reread 'Masks'",
    "nan_rows": "rows where every key is masked come out as NaN (0/0); they must be all zeros;"
    " reread 'Fully masked rows'",
    "uniform_rows": "rows where every key is masked get uniform weights (a finite fill such as -1e6);"
    " they must be all zeros; reread 'Fully masked rows'",
    "additive_mask_rows": "rows where every key is masked get the softmax of their unmasked scores: an additive mask"
    " (-1e4, -1e9) shifts the whole row, and softmax ignores a shift; they must be all zeros (multiply the weights by"
    " the mask, or fill with -inf and divide a zero sum by 1); reread 'Fully masked rows'",
    "causal_flipped": "the causal triangle is flipped: query i may see keys j <= i, not j >= i; reread 'Masks'",
    "causal_bottom_right": "the causal mask is aligned bottom-right; it must be top-left (torch.tril with diagonal 0),"
    " as is_causal=True in PyTorch; reread 'Masks'",
    "causal_strict": "the causal mask hides the diagonal: a query may attend to its own position; reread 'Masks'",
    "causal_ignored": "is_causal=True was ignored: every query attends to later keys too; combine the causal mask"
    " with the given mask (a key is allowed only where both allow it); reread 'Masks'",
    "overflow": "large scores overflow: subtract each row's maximum before exponentiating;"
    " reread 'Numerical stability'",
    "transpose_12": "you transposed axes 1 and 2 instead of the last two (-2, -1): this breaks with extra head dims;"
    " reread the shape table",
    "python_loop": "a Python loop over positions or batches; use batched matrix products instead",
    "mha_split_no_transpose": "the heads were split with view(B, num_heads, T, d_head), which cuts across positions:"
    " view as (B, T, num_heads, d_head), then transpose(1, 2); reread 'Multi-head attention'",
    "mha_merge_no_transpose": "the heads were merged without moving the head axis back: transpose (B, H, T, d_head)"
    " to (B, T, H, d_head) before reshaping to (B, T, d_model); reread 'Multi-head attention'",
    "mha_merge_order": "the heads were merged in the wrong order: each position's d_model features are head 0's"
    " d_head values, then head 1's, and so on ((B, T, H, d_head) reshaped), not interleaved;"
    " reread 'Multi-head attention'",
    "mha_scale_d_model": "the scores were divided by sqrt(d_model); each head's scale is 1/sqrt(d_head), with"
    " d_head = d_model / num_heads; reread 'Multi-head attention'",
    "mask_head_axis": "a 3-D mask (B, 1, T_k) or (B, T_q, T_k), as padding_mask returns, must apply to every head:"
    " give it the head axis (mask.unsqueeze(1)) before attending; reread 'Multi-head attention'",
    "blockwise_no_rescale_sum": "the running sum was not multiplied by exp(old max - new max) when a block raised the"
    " maximum, so earlier blocks keep weights of the wrong size; reread 'Blockwise attention: the online softmax'",
    "blockwise_no_rescale_output": "the running output was not multiplied by exp(old max - new max) when a block"
    " raised the maximum (the sum was); reread 'Blockwise attention: the online softmax'",
    "blockwise_max_from_zero": "the running maximum started at 0 (or another finite floor) instead of -inf: a row"
    " whose scores are all far below it underflows to 0; reread 'Blockwise attention: the online softmax'",
    "blockwise_block_normalised": "each block was normalised on its own and the blocks' outputs added: the softmax"
    " runs over all the keys, with one running sum; reread 'Blockwise attention: the online softmax'",
    "blockwise_last_block_dropped": "the last block, shorter than block_size, was left out: when block_size does"
    " not divide T_k the keys past the last whole block still count; reread 'Blockwise attention: the online"
    " softmax'",
    "blockwise_mask_after_exp": "the mask was applied after the exponential: masked keys still set the running"
    " maximum, and far larger masked scores make the allowed ones underflow; fill masked scores with -inf first;"
    " reread 'Blockwise attention: the online softmax'",
    "blockwise_nan_rows": "rows with no allowed key (so far) come out as NaN: shift them by 0 instead of their"
    " running maximum -inf, and divide a zero sum by 1; reread 'Blockwise attention: the online softmax'",
    "gqa_tiled": "the key/value heads were tiled (repeat) instead of grouped (repeat_interleave): query head h"
    " uses key/value head h // (H / H_kv), not h % H_kv; reread 'Grouped-query attention'",
    "decoding_top_left": "the new queries were masked with is_causal=True, aligned top-left: new query i sits at"
    " position len(cache) - T_new + i and may see every key up to there; align the causal mask bottom-right"
    " (torch.tril with diagonal = T - T_new); reread 'Decoding: the mask aligned bottom-right'",
    "decoding_cache_unused": "the new queries attended only to the new keys: attend to every key and value the cache"
    " holds after the append (what append returns); reread 'Decoding: the mask aligned bottom-right'",
    "cache_head_axis": "the cache grew on the head axis (-3) instead of the time axis (-2): torch.cat(..., dim=-2);"
    " reread 'Decoding with a KV cache'",
    "cache_no_cap": "the cache went past max_len without a ValueError: check len(cache) + T_new against max_len"
    " before adding anything; reread 'Decoding with a KV cache'",
}


# the kinds of input a check may exercise (its marker's ``exercises``), and what a named mistake needs among them
# to show there (a mistake not listed shows on any input): a cause is borrowed only where it can show
INPUTS = ("mask", "fully-masked", "causal", "large-scores")
NEEDS = {
    "mask_inverted": "mask", "zero_fill": "mask", "mask_after_softmax": "mask",
    "nan_rows": "fully-masked", "uniform_rows": "fully-masked", "additive_mask_rows": "fully-masked",
    "causal_flipped": "causal", "causal_bottom_right": "causal", "causal_strict": "causal", "causal_ignored": "causal",
    "overflow": "large-scores", "blockwise_max_from_zero": "large-scores", "blockwise_mask_after_exp": "large-scores",
    "blockwise_nan_rows": "fully-masked",
}  # fmt: skip


def _softmax_filled(scores: Tensor, mask: Tensor | None, fill: float, dim: int = -1) -> Tensor:
    if mask is not None:
        scores = scores.masked_fill(~mask, fill)
    return torch.softmax(scores, dim=dim)


def _additive_rows(scores: Tensor, mask: Tensor) -> Tensor:
    """Right where a row allows some key; where it allows none, the plain softmax of the row
    (a finite additive mask)."""
    weights = ref.masked_softmax(scores, mask)
    none_allowed = ~mask.expand_as(weights).any(dim=-1, keepdim=True)
    return torch.where(none_allowed, torch.softmax(scores, dim=-1).expand_as(weights), weights)


def softmax_variants(scores: Tensor, mask: Tensor | None) -> dict[str, Tensor]:
    """masked_softmax done wrong, each in one classic way."""
    variants = {"query_axis": _softmax_filled(scores, mask, -math.inf, dim=-2).nan_to_num(0.0)}
    if mask is not None:
        variants |= {
            "mask_inverted": ref.masked_softmax(scores, ~mask),
            "zero_fill": _softmax_filled(scores, mask, 0.0),
            "mask_after_softmax": torch.softmax(scores, dim=-1) * mask,
            "nan_rows": _softmax_filled(scores, mask, -math.inf),
            "uniform_rows": _softmax_filled(scores, mask, -1e6),
            "additive_mask_rows": _additive_rows(scores, mask),
        }
    return variants


def scale_variants(scores: Tensor, d_k: int) -> dict[str, Tensor]:
    return {"no_scale": scores, "divide_by_dk": scores / d_k, "multiply_by_sqrt": scores * math.sqrt(d_k)}


def causal_variants(T_q: int, T_k: int) -> dict[str, Tensor]:
    ones = torch.ones(T_q, T_k, dtype=torch.bool)
    return {
        "causal_flipped": torch.triu(ones),
        "causal_bottom_right": torch.tril(ones, diagonal=T_k - T_q),
        "causal_strict": torch.tril(ones, diagonal=-1),
    }


def sdpa_variants(
    Q: Tensor, K: Tensor, V: Tensor, mask: Tensor | None, is_causal: bool
) -> dict[str, tuple[Tensor, Tensor]]:
    """scaled_dot_product_attention done wrong: (output, weights) of each variant."""
    d_k = Q.size(-1)
    raw = ref.attention_scores(Q, K)
    full_mask = mask
    if is_causal:
        causal = ref.causal_mask(Q.size(-2), K.size(-2))
        full_mask = causal if mask is None else mask & causal
    weights = {name: ref.masked_softmax(s, full_mask) for name, s in scale_variants(raw, d_k).items()}
    weights |= softmax_variants(ref.scale_scores(raw, d_k), full_mask)
    if is_causal:
        for name, wrong in causal_variants(Q.size(-2), K.size(-2)).items():
            combined = wrong if mask is None else mask & wrong
            weights[name] = ref.masked_softmax(ref.scale_scores(raw, d_k), combined)
        weights["causal_ignored"] = ref.masked_softmax(ref.scale_scores(raw, d_k), mask)
    return {name: (w @ V, w) for name, w in weights.items()}


def mha_variants(
    heads: tuple[Tensor, Tensor, Tensor], num_heads: int, mask: Tensor | None, is_causal: bool
) -> dict[str, tuple[Tensor, Tensor]]:
    """MultiHeadAttention done wrong between the projections: (merged heads (B, T_q, d_model), weights) of each.

    ``heads`` are the projected query, key and value, (B, T, d_model) each; the output projection
    is the caller's to apply.
    """
    q, k, v = heads
    B, T_q, d_model = q.shape
    d_head = d_model // num_heads
    if mask is not None and mask.dim() == 3:
        mask = mask.unsqueeze(1)

    def split(x):  # (B, T, d_model) -> (B, H, T, d_head)
        return x.view(B, x.size(1), num_heads, d_head).transpose(1, 2)

    def merge(out):  # (B, H, T_q, d_head) -> (B, T_q, d_model)
        return out.transpose(1, 2).reshape(B, T_q, d_model)

    out, weights = ref.scaled_dot_product_attention(split(q), split(k), split(v), mask, is_causal)
    wrong_split = [x.reshape(B, num_heads, x.size(1), d_head) for x in (q, k, v)]
    split_out, split_weights = ref.scaled_dot_product_attention(*wrong_split, mask, is_causal)
    # dividing by sqrt(d_model) is the right attention on Q scaled by sqrt(d_head / d_model)
    scaled_q = split(q) * math.sqrt(d_head / d_model)
    scale_out, scale_weights = ref.scaled_dot_product_attention(scaled_q, split(k), split(v), mask, is_causal)
    return {
        "mha_split_no_transpose": (split_out.reshape(B, T_q, d_model), split_weights),
        "mha_merge_no_transpose": (out.reshape(B, T_q, d_model), weights),
        "mha_merge_order": (out.permute(0, 2, 3, 1).reshape(B, T_q, d_model), weights),
        "mha_scale_d_model": (merge(scale_out), scale_weights),
    }


def _online(Q: Tensor, K: Tensor, V: Tensor, mask: Tensor | None, is_causal: bool, block_size: int, **wrong) -> Tensor:
    """The online softmax over blocks of keys, right unless ``wrong`` names what it does wrong (see
    ``blockwise_variants``), in float64."""
    Q, K, V = Q.double(), K.double(), V.double()
    T_q, T_k = Q.size(-2), K.size(-2)
    full = mask
    if is_causal:
        causal = ref.causal_mask(T_q, T_k)
        full = causal if mask is None else mask & causal
    row_max, row_sum, out = Q.new_full((), wrong.get("start", -math.inf)), Q.new_zeros(()), Q.new_zeros(())
    scores_all = Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1))  # the grader's own inputs: small
    if wrong.get("mask_after"):  # the maximum is taken over every key, masked ones included
        row_max = scores_all.amax(dim=-1, keepdim=True)
    stop_at = T_k - T_k % block_size if wrong.get("drop_last") else T_k
    for start in range(0, stop_at, block_size):
        stop = min(start + block_size, stop_at)
        scores = scores_all[..., start:stop]
        allowed = None if full is None else full[..., start:stop] if full.size(-1) > 1 else full
        if allowed is not None and not wrong.get("mask_after"):
            scores = scores.masked_fill(~allowed, -math.inf)
        if wrong.get("per_block"):
            weights = ref.masked_softmax(scores, allowed)
            out = out + weights @ V[..., start:stop, :]
            continue
        new_max = torch.maximum(row_max, scores.amax(dim=-1, keepdim=True))
        shift = new_max if wrong.get("nan_rows") else new_max.masked_fill(new_max == -math.inf, 0.0)
        rescale = torch.exp(row_max - shift)
        weights = torch.exp(scores - shift)
        if allowed is not None and wrong.get("mask_after"):
            weights = weights * allowed
        row_sum = (row_sum if wrong.get("keep_sum") else row_sum * rescale) + weights.sum(dim=-1, keepdim=True)
        out = (out if wrong.get("keep_output") else out * rescale) + weights @ V[..., start:stop, :]
        row_max = new_max
    if not wrong.get("per_block"):
        out = out / (row_sum if wrong.get("nan_rows") else torch.where(row_sum > 0, row_sum, torch.ones_like(row_sum)))
    leading = [Q.shape[:-2], K.shape[:-2], V.shape[:-2]] + ([full.shape[:-2]] if full is not None else [])
    return out.expand(*torch.broadcast_shapes(*leading), T_q, V.size(-1))  # no block at all: zeros of its shape


def blockwise_variants(
    Q: Tensor, K: Tensor, V: Tensor, mask: Tensor | None, is_causal: bool, block_size: int
) -> dict[str, Tensor]:
    """blockwise_attention done wrong, each in one classic way: its output (float64)."""
    ways = {
        "blockwise_no_rescale_sum": {"keep_sum": True},
        "blockwise_no_rescale_output": {"keep_output": True},
        "blockwise_max_from_zero": {"start": 0.0},
        "blockwise_block_normalised": {"per_block": True},
        "blockwise_last_block_dropped": {"drop_last": True},
        "blockwise_mask_after_exp": {"mask_after": True},
        "blockwise_nan_rows": {"nan_rows": True},
    }
    return {name: _online(Q, K, V, mask, is_causal, block_size, **wrong) for name, wrong in ways.items()}


def name_mistake(actual: Tensor, variants: dict[str, Tensor], atol: float, rtol: float) -> str | None:
    """The key (in SENTENCES) of the one variant the student's tensor matches, if exactly one does.

    When two mistakes give the same result on this input (a single query or key makes several
    causal and mask variants coincide), the input is no evidence for either, and none is named.
    """
    matches = [
        name
        for name, wrong in variants.items()
        if wrong.shape == actual.shape and close(actual.double(), wrong.double(), atol, rtol)
    ]
    return matches[0] if len(matches) == 1 else None


def close(actual: Tensor, expected: Tensor, atol: float, rtol: float) -> bool:
    same_nan = actual.isnan() == expected.isnan()
    error = (actual - expected).abs().nan_to_num(0.0, posinf=math.inf)
    return bool(same_nan.all() and (error <= atol + rtol * expected.abs().nan_to_num(0.0)).all())


def _gqa(Q: Tensor, K: Tensor, V: Tensor, mask: Tensor | None, is_causal: bool, tiled: bool = False):
    """Grouped-query attention in float64 by the reference's attention, each key/value head given to its group of
    query heads (or, ``tiled``, to every H_kv-th query head: ``repeat``)."""
    group = Q.size(-3) // K.size(-3)
    share = (lambda x: x.repeat_interleave(group, dim=-3)) if not tiled else (lambda x: torch.cat([x] * group, dim=-3))
    return ref.scaled_dot_product_attention(Q.double(), share(K.double()), share(V.double()), mask, is_causal)


def gqa_variants(Q: Tensor, K: Tensor, V: Tensor, mask: Tensor | None, is_causal: bool) -> dict[str, tuple]:
    """grouped_query_attention done wrong: (output, weights) in float64, for the mistakes these heads can show (tiled
    and grouped heads agree when H_kv is 1 or H)."""
    if K.size(-3) in (1, Q.size(-3)):
        return {}
    return {"gqa_tiled": _gqa(Q, K, V, mask, is_causal, tiled=True)}


def decoding_variants(
    Q: Tensor, K: Tensor, V: Tensor, chunks: list[int], prefix: int = 0, mask: Tensor | None = None
) -> dict[str, tuple[Tensor, list[Tensor]]]:
    """attend_with_cache done wrong, each in one classic way, over a sequence fed in ``chunks`` after ``prefix``
    positions already cached: (the steps' outputs joined on the time axis, each step's weights), float64. ``mask``
    (..., T_q, T) for the last step alone, where one is given."""
    ways: dict[str, tuple[Tensor, list[Tensor]]] = {}
    for name in ("decoding_top_left", "decoding_cache_unused", "gqa_tiled"):
        if name == "gqa_tiled" and K.size(-3) in (1, Q.size(-3)):
            continue
        outputs, weights, start = [], [], prefix
        for index, size in enumerate(chunks):
            stop = start + size
            q = Q[..., start - prefix : stop - prefix, :]
            given = mask if index == len(chunks) - 1 else None
            if name == "decoding_cache_unused":
                out, w = _gqa(q, K[..., start:stop, :], V[..., start:stop, :], None, True)
            else:
                causal = ref.causal_mask(size, stop)  # top-left: a row of the first queries sees the first keys
                if name == "gqa_tiled":
                    causal = torch.ones(size, stop, dtype=torch.bool).tril(stop - size)
                both = causal if given is None else given & causal
                out, w = _gqa(q, K[..., :stop, :], V[..., :stop, :], both, False, tiled=name == "gqa_tiled")
            outputs.append(out)
            weights.append(w)
            start = stop
        ways[name] = (torch.cat(outputs, dim=-2), weights)
    return ways
