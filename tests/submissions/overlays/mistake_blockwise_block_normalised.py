# Each block is normalised on its own and the blocks' outputs added.
def blockwise_attention(Q, K, V, mask=None, is_causal=False, block_size=16):
    if block_size < 1:
        raise ValueError(f"block_size must be at least 1, got {block_size}")
    T_q, T_k = Q.size(-2), K.size(-2)
    out = Q.new_zeros(())
    queries = torch.arange(T_q, device=Q.device)[:, None]
    for start in range(0, T_k, block_size):
        stop = min(start + block_size, T_k)
        scores = Q @ K[..., start:stop, :].transpose(-2, -1) / math.sqrt(Q.size(-1))
        allowed = None
        if mask is not None:
            allowed = mask if mask.size(-1) == 1 else mask[..., start:stop]
        if is_causal:
            keys = torch.arange(start, stop, device=Q.device)
            allowed = keys <= queries if allowed is None else allowed & (keys <= queries)
        out = out + masked_softmax(scores, allowed) @ V[..., start:stop, :]  # each block's own softmax
    return out
