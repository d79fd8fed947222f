# nanoGPT's attention (karpathy/nanoGPT model.py, CausalSelfAttention's manual path), vectorised, with its causal
# buffer (torch.tril of ones, viewed (1, 1, T, T) and compared with 0) built on every call at the scores' size
# instead of registered once; rows with no allowed key set to 0 before the softmax and zeroed after it. Correct: its
# per-call constant work must not read as a Python loop.
import math

import torch
import torch.nn.functional as F


def scaled_dot_product_attention(Q, K, V, mask=None, is_causal=False):
    T_q, T_k = Q.size(-2), K.size(-2)
    bias = torch.tril(torch.ones(T_q, T_k, device=Q.device)).view(1, 1, T_q, T_k)  # nanoGPT's "bias", made per call
    att = (Q @ K.transpose(-2, -1)) * (1.0 / math.sqrt(K.size(-1)))
    if is_causal:
        att = att.masked_fill(bias[0, 0] == 0, float("-inf"))
    if mask is not None:
        att = att.masked_fill(~mask, float("-inf"))
    dead = torch.isinf(att).all(dim=-1, keepdim=True)  # no allowed key on the row
    att = F.softmax(att.masked_fill(dead, 0.0), dim=-1).masked_fill(dead, 0.0)
    return att @ V, att
