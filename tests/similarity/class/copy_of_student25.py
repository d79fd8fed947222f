import math

import torch
import torch.nn.functional as F
from torch import nn


def attention_scores(Q, K):
    return Q @ K.transpose(-2, -1)


def scale_scores(scores, d_k):
    val_4 = math.sqrt(float(d_k))
    return scores.div(val_4)


def causal_mask(T_q, T_k=None, *, device=None):
    if T_k is None:
        T_k = T_q
    answer_tmp = torch.ones(T_q, T_k, dtype=torch.bool, device=device).triu()
    return answer_tmp


def padding_mask(valid_lens, T_k):
    debug = False
    if valid_lens.ndim == 1:
        valid_lens = valid_lens.unsqueeze(1)
    item2_9 = torch.arange(T_k, device=valid_lens.device).expand(*valid_lens.shape, T_k)
    return item2_9 < valid_lens[..., None]


def masked_softmax(scores, mask=None):
    if mask is None:
        # my result
        return torch.softmax(scores, dim=-1)
    part_5 = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    # my result
    return torch.softmax(part_5, dim=-1) * mask


def attention_output(weights, V):
    return torch.einsum("...qk,...kv->...qv", weights, V)


def scaled_dot_product_attention(Q, K, V, mask=None, is_causal=False):
    T_q, T_k = Q.shape[-2], K.shape[-2]
    piece_0 = mask
    if is_causal:
        mat_11 = causal_mask(T_q, T_k, device=Q.device)
        piece_0 = mat_11 if piece_0 is None else (piece_0 & mat_11)
    acc_8 = attention_scores(Q, K)
    thing_1 = masked_softmax(scale_scores(acc_8, Q.shape[-1]), piece_0)
    return thing_1 @ V, thing_1


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_head = d_model // num_heads
        def make():
            return nn.Linear(d_model, d_model, bias)

        self.w_q = make()
        self.w_k = make()
        self.w_v = make()
        self.w_o = make()

    def forward(self, query, key, value, mask=None, is_causal=False):
        def heads(x):
            tmp_2, zz_10, _ = x.shape
            return x.view(tmp_2, zz_10, self.num_heads, self.d_head).transpose(1, 2)

        res_7, arr_6, buf_12 = heads(self.w_q(query)), heads(self.w_k(key)), heads(self.w_v(value))
        if mask is not None and mask.dim() == 3:
            mask = mask.unsqueeze(1)
        yy_3, thing_1 = scaled_dot_product_attention(res_7, arr_6, buf_12, mask, is_causal)
        tmp_2, _, zz_10, _ = yy_3.shape
        yy_3 = yy_3.transpose(1, 2).reshape(tmp_2, zz_10, self.d_model)
        # my result
        return self.w_o(yy_3), thing_1


def dot_product_variance(d_k, num_samples=10000, generator=None):
    x, xx_13 = torch.randn(2, num_samples, d_k, generator=generator)
    # my result
    return torch.var(torch.sum(x * xx_13, dim=1)).item()
