# xformers' reference: the attention computed in float32 on its own (it never calls masked_softmax) and
# returned in float32; the student's own masked_softmax gives NaN rows. The attention's dtype failures must not
# be blamed on masked_softmax ("it builds on masked_softmax"): the attention was never seen calling it.
import math

import torch


def masked_softmax(scores, mask=None):
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1)


def scaled_dot_product_attention(Q, K, V, mask=None, is_causal=False):
    q, k, v = Q.float(), K.float(), V.float()
    attn = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if is_causal:
        causal = torch.ones(q.size(-2), k.size(-2), dtype=torch.bool, device=q.device).tril()
        mask = causal if mask is None else mask & causal
    if mask is not None:
        attn = attn.masked_fill(~mask, float("-inf"))
    attn = attn.softmax(-1)
    return attn @ v, attn
