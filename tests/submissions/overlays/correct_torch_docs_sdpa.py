# The Python equivalent of F.scaled_dot_product_attention printed in PyTorch's documentation, ported: an additive
# bias of zeros (T_q, T_k) made on every call, -inf where the causal triangle or the bool mask forbids, added to the
# scaled scores before a softmax. Out of place (the docs' masked_fill_ cannot broadcast a (B, 1, 1, T_k) mask into
# the bias), and rows with no allowed key zeroed instead of NaN. Correct: per-call constant work, vectorised.
import math

import torch


def scaled_dot_product_attention(Q, K, V, mask=None, is_causal=False):
    L, S = Q.size(-2), K.size(-2)
    scale_factor = 1 / math.sqrt(Q.size(-1))
    attn_bias = torch.zeros(L, S, dtype=Q.dtype, device=Q.device)
    if is_causal:
        temp_mask = torch.ones(L, S, dtype=torch.bool).tril(diagonal=0)
        attn_bias = attn_bias.masked_fill(temp_mask.logical_not(), float("-inf"))
    if mask is not None:
        attn_bias = attn_bias.masked_fill(mask.logical_not(), float("-inf"))
    attn_weight = Q @ K.transpose(-2, -1) * scale_factor
    attn_weight = attn_weight + attn_bias
    dead = (attn_bias == float("-inf")).all(dim=-1, keepdim=True)  # no allowed key on the row
    attn_weight = torch.softmax(attn_weight.masked_fill(dead, 0.0), dim=-1).masked_fill(dead, 0.0)
    return attn_weight @ V, attn_weight
