# Two independent mistakes: masked_softmax normalises over the queries (dim=-2), and scaled_dot_product_attention
# pre-multiplies Q and K by 256 "for precision" and divides the scores back: in float16 the scores overflow to inf.
import math

import torch


def masked_softmax(scores, mask=None):
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-2).nan_to_num(0.0)


def scaled_dot_product_attention(Q, K, V, mask=None, is_causal=False):
    scores = attention_scores(Q * 256, K * 256) / 65536
    scores = scale_scores(scores, Q.size(-1))
    if is_causal:
        causal = causal_mask(Q.size(-2), K.size(-2), device=Q.device)
        mask = causal if mask is None else mask & causal
    weights = masked_softmax(scores, mask)
    return attention_output(weights, V), weights
