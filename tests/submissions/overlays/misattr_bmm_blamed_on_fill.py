# torch.bmm takes 3-D inputs only (it raises on a head axis), and masked_softmax fills with -1e6
# (uniform rows, named where rows are fully masked): the bmm error must not be explained by the fill.
import math

import torch


def masked_softmax(scores, mask=None):
    if mask is not None:
        scores = scores.masked_fill(~mask, -1e6)
    return torch.softmax(scores, dim=-1)


def scaled_dot_product_attention(Q, K, V, mask=None, is_causal=False):
    scores = torch.bmm(Q, K.transpose(-2, -1)) / math.sqrt(Q.size(-1))
    if is_causal:
        causal = causal_mask(Q.size(-2), K.size(-2), device=Q.device)
        mask = causal if mask is None else mask & causal
    weights = masked_softmax(scores, mask)
    return torch.bmm(weights, V), weights
