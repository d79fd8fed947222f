import torch


def scaled_dot_product_attention(Q, K, V, mask=None, is_causal=False):
    T_q, T_k = Q.size(-2), K.size(-2)
    if is_causal:
        causal = causal_mask(T_q, T_k, device=Q.device)
        mask = causal if mask is None else mask & causal
    if mask is not None:
        mask = mask.expand(*Q.shape[:-2], T_q, T_k)
    rows, weights = [], []
    for i in range(T_q):  # one query at a time: correct, but slow
        scores = scale_scores(Q[..., i : i + 1, :] @ K.transpose(-2, -1), Q.size(-1))
        w = masked_softmax(scores, None if mask is None else mask[..., i : i + 1, :])
        weights.append(w)
        rows.append(w @ V)
    return torch.cat(rows, dim=-2), torch.cat(weights, dim=-2)
