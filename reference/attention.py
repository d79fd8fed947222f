"""Scaled dot-product attention, one step at a time.

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V

Shapes use these letters throughout:

    ...   any number of leading batch / head dimensions (B, or B and H)
    T_q   number of queries          T_k   number of keys (= number of values)
    d_k   size of a query or key     d_v   size of a value

Build the functions in the order they appear; each later one uses the earlier ones.
Every function keeps the dtype and device of its inputs and must not modify them.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


def attention_scores(Q: Tensor, K: Tensor) -> Tensor:
    """Raw attention scores: every query dotted with every key.

    Args:
        Q: queries, shape (..., T_q, d_k).
        K: keys, shape (..., T_k, d_k).

    Returns:
        scores of shape (..., T_q, T_k) where scores[..., i, j] = Q[..., i, :] . K[..., j, :]
    """
    ### BEGIN SOLUTION
    # HINT: transpose only the last two axes of K, then use a batched matrix product
    # Q K^T: swap the last two axes of K so the d_k axes meet in the product
    return Q @ K.transpose(-2, -1)  # (..., T_q, d_k) @ (..., d_k, T_k) -> (..., T_q, T_k)
    ### END SOLUTION


def scale_scores(scores: Tensor, d_k: int) -> Tensor:
    """Divide the scores by sqrt(d_k), so their variance is about 1 whatever d_k is.

    Args:
        scores: raw scores, any shape.
        d_k: the size of the query and key vectors.

    Returns:
        scores / sqrt(d_k), same shape and dtype as scores.
    """
    ### BEGIN SOLUTION
    # HINT: divide by the square root of d_k, not by d_k itself
    # Var(q . k) = d_k, so dividing by its standard deviation sqrt(d_k) brings it back to 1
    return scores / math.sqrt(d_k)
    ### END SOLUTION


def causal_mask(T_q: int, T_k: int | None = None, *, device: torch.device | str | None = None) -> Tensor:
    """Causal mask: query i may attend to key j only when j <= i.

    The mask is aligned at the top left, exactly like is_causal=True in
    torch.nn.functional.scaled_dot_product_attention, also when T_q != T_k.

    Args:
        T_q: number of queries (rows).
        T_k: number of keys (columns); defaults to T_q.
        device: where to create the mask.

    Returns:
        bool tensor of shape (T_q, T_k); True where the query may attend to the key.
    """
    if T_k is None:
        T_k = T_q
    ### BEGIN SOLUTION
    # HINT: a lower-triangular matrix of True values (torch.tril) of shape (T_q, T_k)
    # causal mask: attend only to the left, including the diagonal
    allowed = torch.ones(T_q, T_k, dtype=torch.bool, device=device)  # (T_q, T_k)
    return torch.tril(allowed)
    ### END SOLUTION


def padding_mask(valid_lens: Tensor, T_k: int) -> Tensor:
    """Turn sequence lengths into a key mask, as in d2l's masked_softmax.

    Args:
        valid_lens: integer lengths, shape (B,) (one length per sequence) or
            (B, T_q) (one length per query).
        T_k: number of keys.

    Returns:
        bool mask, shape (B, 1, T_k) for valid_lens of shape (B,), or (B, T_q, T_k)
        for valid_lens of shape (B, T_q). True for the first valid_lens keys, which
        may be attended to; False for the padding after them.
    """
    ### BEGIN SOLUTION
    # HINT: compare torch.arange(T_k) with valid_lens given a trailing axis of size 1
    if valid_lens.dim() == 1:
        valid_lens = valid_lens[:, None]  # (B,) -> (B, 1): one length shared by all queries
    key_positions = torch.arange(T_k, device=valid_lens.device)  # (T_k,)
    # key j is real (not padding) when it comes before the sequence's length
    return key_positions < valid_lens[..., None]  # (B, T_q or 1, 1) vs (T_k,) -> (B, T_q or 1, T_k)
    ### END SOLUTION


def masked_softmax(scores: Tensor, mask: Tensor | None = None) -> Tensor:
    """Softmax over the last (key) axis, ignoring the keys the mask forbids.

    Args:
        scores: scaled scores, shape (..., T_q, T_k).
        mask: optional bool tensor broadcastable to scores; True = may attend.

    Returns:
        weights, same shape as scores (after broadcasting with mask): every row is
        non-negative and sums to 1 over its allowed keys; masked entries are exactly 0;
        a row with no allowed key is all zeros. Never NaN, in the result or in its
        gradient, even for scores as large as 1e4.
    """
    if mask is not None and mask.dtype != torch.bool:
        raise TypeError(f"mask must be a bool tensor (True = may attend), got dtype {mask.dtype}")
    ### BEGIN SOLUTION
    # HINT: fill masked scores with -inf, subtract the row max, exponentiate, and never divide by 0
    if mask is None:
        return torch.softmax(scores, dim=-1)
    # a masked key gets score -inf, so exp() gives it weight exactly 0
    scores = scores.masked_fill(~mask, float("-inf"))
    # subtract each row's largest score so exp() cannot overflow;
    # a row with no allowed key has max -inf: shift it by 0 instead
    row_max = scores.amax(dim=-1, keepdim=True)  # (..., T_q, 1)
    row_max = row_max.masked_fill(row_max == float("-inf"), 0.0).detach()
    exp = torch.exp(scores - row_max)  # (..., T_q, T_k)
    total = exp.sum(dim=-1, keepdim=True)  # (..., T_q, 1)
    # a fully masked row sums to 0: divide it by 1 so its weights stay 0 instead of 0/0 = NaN
    total = torch.where(total > 0, total, torch.ones_like(total))
    return exp / total
    ### END SOLUTION


def attention_output(weights: Tensor, V: Tensor) -> Tensor:
    """Weighted sum of the values: each output row mixes the value rows by its weights.

    Args:
        weights: attention weights, shape (..., T_q, T_k).
        V: values, shape (..., T_k, d_v).

    Returns:
        output of shape (..., T_q, d_v).
    """
    ### BEGIN SOLUTION
    # HINT: one batched matrix product
    return weights @ V  # (..., T_q, T_k) @ (..., T_k, d_v) -> (..., T_q, d_v)
    ### END SOLUTION


def scaled_dot_product_attention(
    Q: Tensor,
    K: Tensor,
    V: Tensor,
    mask: Tensor | None = None,
    is_causal: bool = False,
) -> tuple[Tensor, Tensor]:
    """softmax(Q K^T / sqrt(d_k)) V, built from the functions above.

    Do not call torch.nn.functional.scaled_dot_product_attention or any other fused
    attention here: the point is to write it yourself.

    Args:
        Q: queries, shape (..., T_q, d_k).
        K: keys, shape (..., T_k, d_k).
        V: values, shape (..., T_k, d_v).
        mask: optional bool mask broadcastable to (..., T_q, T_k); True = may attend.
        is_causal: if True, also apply causal_mask(T_q, T_k); with a mask as well,
            a key is allowed only where both allow it.

    Returns:
        (output, weights): output of shape (..., T_q, d_v) and the attention
        weights of shape (..., T_q, T_k).
    """
    ### BEGIN SOLUTION
    # HINT: scores, then scale, then (combine the masks and) masked softmax, then the output
    d_k = Q.size(-1)
    scores = scale_scores(attention_scores(Q, K), d_k)  # (..., T_q, T_k)
    if is_causal:
        causal = causal_mask(Q.size(-2), K.size(-2), device=Q.device)  # (T_q, T_k)
        # both masks must allow a key
        mask = causal if mask is None else mask & causal
    weights = masked_softmax(scores, mask)  # (..., T_q, T_k)
    return attention_output(weights, V), weights
    ### END SOLUTION


def blockwise_attention(
    Q: Tensor,
    K: Tensor,
    V: Tensor,
    mask: Tensor | None = None,
    is_causal: bool = False,
    block_size: int = 16,
) -> Tensor:
    """The output of scaled_dot_product_attention, computed one block of keys at a time (the online softmax).

    The (T_q, T_k) matrix of scores is never built: each block of block_size keys gives a
    (T_q, block_size) piece of it, and three running tensors carry what the softmax needs from
    the blocks before: each query's largest score so far, its sum of exp(score - largest) and
    its output so far. When a block raises the largest score, the sum and the output are
    multiplied by exp(old largest - new largest) before the block's share is added.

    Do not call scaled_dot_product_attention or masked_softmax on all the keys at once, and no
    fused attention: the point is the running softmax.

    Args:
        Q: queries, shape (..., T_q, d_k).
        K: keys, shape (..., T_k, d_k).
        V: values, shape (..., T_k, d_v).
        mask: optional bool mask broadcastable to (..., T_q, T_k); True = may attend.
        is_causal: if True, query i may attend only to keys j <= i (as causal_mask).
        block_size: how many keys a block holds (the last block may hold fewer).

    Returns:
        output of shape (..., T_q, d_v): what scaled_dot_product_attention(Q, K, V, mask,
        is_causal) returns as its output (a row with no allowed key is all zeros, never NaN),
        without building a tensor of T_q x T_k elements per batch and head when
        block_size < T_k.
    """
    if block_size < 1:
        raise ValueError(f"block_size must be at least 1, got {block_size}")
    ### BEGIN SOLUTION
    # HINT: per block: new max = max(old max, block max); multiply the sum and the output by exp(old max - new max)
    T_q, T_k = Q.size(-2), K.size(-2)
    scale = 1.0 / math.sqrt(Q.size(-1))
    # the running tensors start as single numbers: the first block broadcasts them to (..., T_q, 1) and (..., T_q, d_v)
    row_max = Q.new_full((), float("-inf"))  # the largest score seen so far
    row_sum = Q.new_zeros(())  # the sum of exp(score - row_max) over the keys seen so far
    out = Q.new_zeros(())  # the sum of exp(score - row_max) * value over the keys seen so far
    queries = torch.arange(T_q, device=Q.device)[:, None]  # (T_q, 1)
    for start in range(0, T_k, block_size):
        stop = min(start + block_size, T_k)
        scores = Q @ K[..., start:stop, :].transpose(-2, -1) * scale  # (..., T_q, b)
        allowed = None
        if mask is not None:  # a mask of one key column applies to every block
            allowed = mask if mask.size(-1) == 1 else mask[..., start:stop]
        if is_causal:
            keys = torch.arange(start, stop, device=Q.device)  # (b,)
            allowed = keys <= queries if allowed is None else allowed & (keys <= queries)  # (T_q, b)
        if allowed is not None:  # a masked key gets score -inf, so exp() gives it weight exactly 0
            scores = scores.masked_fill(~allowed, float("-inf"))
        new_max = torch.maximum(row_max, scores.amax(dim=-1, keepdim=True)).detach()  # (..., T_q, 1)
        # no allowed key yet: the max is -inf; shift by 0 instead, so that exp() never sees -inf - (-inf) = NaN
        shift = new_max.masked_fill(new_max == float("-inf"), 0.0)
        rescale = torch.exp(row_max - shift)  # (..., T_q, 1): 1 if the max did not grow, smaller if it did
        weights = torch.exp(scores - shift)  # (..., T_q, b)
        row_sum = row_sum * rescale + weights.sum(dim=-1, keepdim=True)
        out = out * rescale + weights @ V[..., start:stop, :]  # (..., T_q, d_v)
        row_max = new_max
    # a row with no allowed key sums to 0: divide it by 1 so its output stays 0 instead of 0/0 = NaN
    return out / torch.where(row_sum > 0, row_sum, torch.ones_like(row_sum))
    ### END SOLUTION


class MultiHeadAttention(nn.Module):
    """Multi-head attention: num_heads attentions side by side, each on d_model / num_heads features.

    Attributes:
        w_q, w_k, w_v: nn.Linear(d_model, d_model, bias) projections of query, key and value.
        w_o: nn.Linear(d_model, d_model, bias) applied to the concatenated heads.
    """

    def __init__(self, d_model: int, num_heads: int, bias: bool = True) -> None:
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(f"d_model ({d_model}) must be divisible by num_heads ({num_heads})")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_head = d_model // num_heads
        ### BEGIN SOLUTION
        # HINT: four nn.Linear(d_model, d_model, bias=bias) named w_q, w_k, w_v and w_o
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)
        ### END SOLUTION

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        mask: Tensor | None = None,
        is_causal: bool = False,
    ) -> tuple[Tensor, Tensor]:
        """Project, split into heads, attend, merge the heads, project again.

        Args:
            query: (B, T_q, d_model).
            key, value: (B, T_k, d_model).
            mask: optional bool mask, True = may attend: either 3-D, (B, T_q, T_k) or (B, 1, T_k)
                as padding_mask returns, the same for every head (insert the head axis:
                (B, 1, T_q, T_k)); or 2-D (T_q, T_k) or 4-D, broadcastable to (B, num_heads, T_q, T_k).
            is_causal: apply a causal mask as in scaled_dot_product_attention.

        Returns:
            (output, weights): output of shape (B, T_q, d_model), weights of shape (B, num_heads, T_q, T_k).
        """
        ### BEGIN SOLUTION
        # HINT: view (B, T, d_model) as (B, T, H, d_head), transpose to (B, H, T, d_head), give a 3-D mask its head axis, attend, undo
        B, T_q, _ = query.shape
        H, d_head = self.num_heads, self.d_head
        q = self.w_q(query).view(B, T_q, H, d_head).transpose(1, 2)  # (B, H, T_q, d_head)
        k = self.w_k(key).view(B, -1, H, d_head).transpose(1, 2)  # (B, H, T_k, d_head)
        v = self.w_v(value).view(B, -1, H, d_head).transpose(1, 2)  # (B, H, T_k, d_head)
        if mask is not None and mask.dim() == 3:
            # one mask per sequence, shared by the heads: (B, T_q or 1, T_k) -> (B, 1, T_q or 1, T_k)
            mask = mask.unsqueeze(1)
        out, weights = scaled_dot_product_attention(q, k, v, mask, is_causal)  # (B, H, T_q, d_head)
        # merge the heads back side by side: (B, H, T_q, d_head) -> (B, T_q, d_model)
        out = out.transpose(1, 2).reshape(B, T_q, self.d_model)
        return self.w_o(out), weights
        ### END SOLUTION


def dot_product_variance(d_k: int, num_samples: int = 10000, generator: torch.Generator | None = None) -> float:
    """Empirical variance of q . k for random q, k ~ N(0, I_{d_k}): the reason for the scale.

    Draw num_samples independent pairs (q, k) with torch.randn(..., generator=generator)
    and return the sample variance of their dot products. It comes out close to d_k.

    Args:
        d_k: size of the vectors.
        num_samples: number of (q, k) pairs.
        generator: random generator to draw from (so the result is reproducible).

    Returns:
        the sample variance, a Python float.
    """
    ### BEGIN SOLUTION
    # HINT: draw two (num_samples, d_k) tensors with torch.randn, take row-wise dot products, then .var()
    q = torch.randn(num_samples, d_k, generator=generator)  # (N, d_k)
    k = torch.randn(num_samples, d_k, generator=generator)  # (N, d_k)
    dots = (q * k).sum(dim=-1)  # (N,): one dot product per pair
    return dots.var().item()
    ### END SOLUTION


def grouped_query_attention(
    Q: Tensor,
    K: Tensor,
    V: Tensor,
    mask: Tensor | None = None,
    is_causal: bool = False,
) -> tuple[Tensor, Tensor]:
    """Attention in which groups of query heads share one key/value head (grouped-query attention).

    Q has H heads, K and V have H_kv heads, and H is a multiple of H_kv: the G = H / H_kv query
    heads of a group use one key/value head, query head h using key/value head h // G (heads
    0, ..., G-1 use head 0, the next G use head 1, and so on), exactly as
    torch.nn.functional.scaled_dot_product_attention(..., enable_gqa=True). H_kv = H is plain
    multi-head attention; H_kv = 1 is multi-query attention. Built on your
    scaled_dot_product_attention.

    Args:
        Q: queries, shape (..., H, T_q, d_k).
        K: keys, shape (..., H_kv, T_k, d_k).
        V: values, shape (..., H_kv, T_k, d_v).
        mask: optional bool mask broadcastable to (..., H, T_q, T_k); True = may attend.
        is_causal: as in scaled_dot_product_attention (top-left aligned).

    Returns:
        (output, weights): output of shape (..., H, T_q, d_v) and the attention weights
        of shape (..., H, T_q, T_k).

    Raises:
        ValueError: when H is not a multiple of H_kv (the message names both).
    """
    ### BEGIN SOLUTION
    # HINT: check that H_kv divides H (else ValueError); then repeat_interleave each key/value head G times on axis -3
    H, H_kv = Q.size(-3), K.size(-3)
    if H % H_kv != 0:
        problem = f"{H} query heads cannot be shared out among {H_kv} key/value heads"
        raise ValueError(f"{problem}: H must be a multiple of H_kv")
    group = H // H_kv  # G: query heads per key/value head
    K = K.repeat_interleave(group, dim=-3)  # (..., H_kv, T_k, d_k) -> (..., H, T_k, d_k): head h is head h // G
    V = V.repeat_interleave(group, dim=-3)  # (..., H_kv, T_k, d_v) -> (..., H, T_k, d_v)
    return scaled_dot_product_attention(Q, K, V, mask, is_causal)
    ### END SOLUTION


class KVCache:
    """The keys and values of every position decoded so far, for attention one step at a time.

    append adds the new positions' keys and values on the time axis (-2) and gives back all of
    them: after T positions, keys of shape (..., H_kv, T, d_k) and values (..., H_kv, T, d_v);
    the leading axes (batch, key/value heads) are those of every append.

    Attributes:
        max_len: the most positions the cache may hold.
    """

    def __init__(self, max_len: int) -> None:
        if max_len < 1:
            raise ValueError(f"max_len must be at least 1, got {max_len}")
        self.max_len = max_len
        ### BEGIN SOLUTION
        # HINT: start empty (None): the first append gives the keys and values their shape
        self.K: Tensor | None = None  # (..., H_kv, T, d_k) once something is cached
        self.V: Tensor | None = None  # (..., H_kv, T, d_v)
        ### END SOLUTION

    def append(self, K_new: Tensor, V_new: Tensor) -> tuple[Tensor, Tensor]:
        """Add T_new positions to the cache and return everything it holds.

        Args:
            K_new: the new positions' keys, shape (..., H_kv, T_new, d_k).
            V_new: their values, shape (..., H_kv, T_new, d_v).

        Returns:
            (K_all, V_all): every cached key, shape (..., H_kv, T, d_k), and value,
            shape (..., H_kv, T, d_v), oldest first, where T = len(self) after the append.

        Raises:
            ValueError: when the cache would hold more than max_len positions; nothing is added then.
        """
        ### BEGIN SOLUTION
        # HINT: refuse what would go past max_len first, then torch.cat on the time axis, dim=-2
        if len(self) + K_new.size(-2) > self.max_len:
            full = f"the cache holds {len(self)} of at most max_len = {self.max_len} positions"
            raise ValueError(f"{full}: {K_new.size(-2)} more do not fit")
        first = self.K is None  # nothing cached yet: the new positions are all there is
        self.K = K_new if first else torch.cat([self.K, K_new], dim=-2)  # (..., H_kv, T + T_new, d_k): time is -2
        self.V = V_new if first else torch.cat([self.V, V_new], dim=-2)  # (..., H_kv, T + T_new, d_v)
        return self.K, self.V
        ### END SOLUTION

    def __len__(self) -> int:
        """The number of positions cached so far."""
        ### BEGIN SOLUTION
        # HINT: the length of the time axis (-2) of what is cached; 0 when nothing is
        return 0 if self.K is None else self.K.size(-2)
        ### END SOLUTION


def attend_with_cache(
    Q_new: Tensor,
    K_new: Tensor,
    V_new: Tensor,
    cache: KVCache,
    mask: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """One step of decoding: the new positions attend to every position cached so far, their own included.

    The new keys and values are appended to the cache first; then, with T = len(cache), new
    query i sits at position T - T_new + i and may attend to keys 0, ..., T - T_new + i: the
    causal mask aligned at the bottom right (not the top left of is_causal=True). Feeding a
    sequence one token or one chunk at a time gives what
    grouped_query_attention(Q, K, V, is_causal=True) gives over the whole sequence.

    Args:
        Q_new: the new positions' queries, shape (..., H, T_new, d_k).
        K_new: their keys, shape (..., H_kv, T_new, d_k).
        V_new: their values, shape (..., H_kv, T_new, d_v).
        cache: the KVCache of the positions before these; they are appended to it.
        mask: optional bool mask broadcastable to (..., H, T_new, T); True = may attend;
            a key is allowed only where it and the causal mask both allow it.

    Returns:
        (output, weights): output of shape (..., H, T_new, d_v) and the attention weights
        of shape (..., H, T_new, T).
    """
    ### BEGIN SOLUTION
    # HINT: append first; then query i may see key j when j <= T - T_new + i: torch.tril with diagonal=T - T_new
    K_all, V_all = cache.append(K_new, V_new)  # (..., H_kv, T, d_k), (..., H_kv, T, d_v)
    T_new, T = Q_new.size(-2), len(cache)
    allowed = torch.ones(T_new, T, dtype=torch.bool, device=Q_new.device)  # (T_new, T)
    # causal mask aligned bottom-right: the last new query sees every key, the first T - T_new + 1 of them
    causal = torch.tril(allowed, diagonal=T - T_new)
    mask = causal if mask is None else mask & causal
    return grouped_query_attention(Q_new, K_all, V_all, mask)
    ### END SOLUTION
