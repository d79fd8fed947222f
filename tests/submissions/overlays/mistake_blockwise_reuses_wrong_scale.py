# blockwise_attention reuses the student's own steps (attention_scores, scale_scores), and scale_scores divides by
# d_k: one mistake, in scale_scores; the blockwise part builds on it.
def scale_scores(scores, d_k):
    return scores / d_k


def blockwise_attention(
    Q: Tensor,
    K: Tensor,
    V: Tensor,
    mask: Tensor | None = None,
    is_causal: bool = False,
    block_size: int = 16,
) -> Tensor:
    if block_size < 1:
        raise ValueError(f"block_size must be at least 1, got {block_size}")
    T_q, T_k = Q.size(-2), K.size(-2)
    scale = 1.0 / math.sqrt(Q.size(-1))
    # the running tensors start as single numbers: the first block broadcasts them to (..., T_q, 1) and (..., T_q, d_v)
    row_max = Q.new_full((), float("-inf"))  # the largest score seen so far
    row_sum = Q.new_zeros(())  # the sum of exp(score - row_max) over the keys seen so far
    out = Q.new_zeros(())  # the sum of exp(score - row_max) * value over the keys seen so far
    queries = torch.arange(T_q, device=Q.device)[:, None]  # (T_q, 1)
    for start in range(0, T_k, block_size):
        stop = min(start + block_size, T_k)
        scores = scale_scores(attention_scores(Q, K[..., start:stop, :]), Q.size(-1))  # its own steps
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
