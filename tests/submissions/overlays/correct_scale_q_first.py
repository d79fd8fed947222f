import math


def scaled_dot_product_attention(Q, K, V, mask=None, is_causal=False):
    if is_causal:
        causal = causal_mask(Q.size(-2), K.size(-2), device=Q.device)
        mask = causal if mask is None else mask & causal
    scores = (Q / math.sqrt(Q.size(-1))) @ K.transpose(-2, -1)  # scale Q before the product
    weights = masked_softmax(scores, mask)
    return weights @ V, weights
