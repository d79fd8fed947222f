# An einsum that names a batch axis ("b...") needs one: (T, d) inputs without a batch axis raise.
# Only inputs without a batch axis show it.
import math

import torch


def scaled_dot_product_attention(Q, K, V, mask=None, is_causal=False):
    scores = torch.einsum("b...qd,b...kd->b...qk", Q, K) / math.sqrt(Q.size(-1))
    if is_causal:
        causal = causal_mask(Q.size(-2), K.size(-2), device=Q.device)
        mask = causal if mask is None else mask & causal
    weights = masked_softmax(scores, mask)
    return attention_output(weights, V), weights
