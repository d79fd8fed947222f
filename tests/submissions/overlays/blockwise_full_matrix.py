# Right values, but the whole (T_q, T_k) matrix of scores is built first and then sliced block by block: the online
# softmax's arithmetic without its point. It must lose blockwise_memory alone.
def blockwise_attention(Q, K, V, mask=None, is_causal=False, block_size=16):
    if block_size < 1:
        raise ValueError(f"block_size must be at least 1, got {block_size}")
    all_scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1))  # (..., T_q, T_k): what the part forbids
    T_q, T_k = all_scores.shape[-2:]
    row_max, row_sum, out = Q.new_full((), float("-inf")), Q.new_zeros(()), Q.new_zeros(())
    queries = torch.arange(T_q, device=Q.device)[:, None]
    for start in range(0, T_k, block_size):
        stop = min(start + block_size, T_k)
        scores = all_scores[..., start:stop]
        allowed = None
        if mask is not None:
            allowed = mask if mask.size(-1) == 1 else mask[..., start:stop]
        if is_causal:
            keys = torch.arange(start, stop, device=Q.device)
            allowed = keys <= queries if allowed is None else allowed & (keys <= queries)
        if allowed is not None:
            scores = scores.masked_fill(~allowed, float("-inf"))
        new_max = torch.maximum(row_max, scores.amax(dim=-1, keepdim=True)).detach()
        shift = new_max.masked_fill(new_max == float("-inf"), 0.0)
        rescale = torch.exp(row_max - shift)
        weights = torch.exp(scores - shift)
        row_sum = row_sum * rescale + weights.sum(dim=-1, keepdim=True)
        out = out * rescale + weights @ V[..., start:stop, :]
        row_max = new_max
    return out / torch.where(row_sum > 0, row_sum, torch.ones_like(row_sum))
