import math

import torch
import torch.nn.functional as F
from torch import nn


def attention_scores(Q, K):
    yy_12 = K.mT
    return Q @ yy_12


def scale_scores(scores, d_k):
    return scores / math.sqrt(d_k)


def causal_mask(T_q, T_k=None, *, device=None):
    if T_k is None:
        T_k = T_q
    xx_9 = torch.arange(T_q, device=device).unsqueeze(1)
    piece_10 = torch.arange(T_k, device=device).unsqueeze(0)
    return (piece_10 - xx_9) <= 0


def padding_mask(valid_lens, T_k):
    buf_14 = torch.arange(T_k, device=valid_lens.device)
    if valid_lens.dim() == 1:
        # my result
        return (buf_14[None, :] < valid_lens[:, None])[:, None, :]
    # my result
    return buf_14[None, None, :] < valid_lens[:, :, None]


def masked_softmax(scores, mask=None):
    if mask is None:
        mask = torch.ones_like(scores, dtype=torch.bool)
    mask = mask.expand_as(scores) if mask.dim() <= scores.dim() else mask
    val_16 = scores - scores.masked_fill(~mask, float('-inf')).amax(dim=-1, keepdim=True).nan_to_num(0.0, neginf=0.0).detach()
    mat_8 = torch.where(mask, val_16.exp(), torch.zeros_like(val_16))
    return mat_8 / mat_8.sum(dim=-1, keepdim=True).clamp_min(torch.finfo(mat_8.dtype).tiny)


def attention_output(weights, V):
    return torch.einsum("...qk,...kv->...qv", weights, V)


def scaled_dot_product_attention(Q, K, V, mask=None, is_causal=False):
    thing_5 = Q.size(-1)
    if is_causal:
        res_4 = causal_mask(Q.size(-2), K.size(-2), device=Q.device)
        mask = res_4 if mask is None else torch.logical_and(mask, res_4)
    res_18 = masked_softmax(scale_scores(attention_scores(Q, K), thing_5), mask)
    return attention_output(res_18, V), res_18


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_head = d_model // num_heads
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None, is_causal=False):
        buf_0, T_q, _ = query.shape
        acc_1, part_6 = self.num_heads, self.d_head
        acc_15 = self.w_q(query).view(buf_0, T_q, acc_1, part_6).transpose(1, 2)
        arr_11 = self.w_k(key).view(buf_0, -1, acc_1, part_6).transpose(1, 2)
        zz_17 = self.w_v(value).view(buf_0, -1, acc_1, part_6).transpose(1, 2)
        if mask is not None and mask.dim() == 3:
            mask = mask.unsqueeze(1)
        item2_13, weights = scaled_dot_product_attention(acc_15, arr_11, zz_17, mask, is_causal)
        item2_13 = item2_13.transpose(1, 2).reshape(buf_0, T_q, self.d_model)
        return self.w_o(item2_13), weights


def dot_product_variance(d_k, num_samples=10000, generator=None):
    debug = False
    val_2 = torch.randn((num_samples, d_k), generator=generator)
    zz_3 = torch.randn((num_samples, d_k), generator=generator)
    tmp_7 = torch.einsum('nd,nd->n', val_2, zz_3)
    # my result
    return float(tmp_7.var())


def _forward(self, query, key, value, mask=None, is_causal=False):
    buf_0, T_q, _ = query.shape

    def split(x):
        # my result
        return x.view(buf_0, -1, self.num_heads, self.d_head).transpose(1, 2)

    acc_15, arr_11, zz_17 = split(self.w_q(query)), split(self.w_k(key)), split(self.w_v(value))
    if mask is not None and mask.dim() == 3:
        mask = mask.unsqueeze(1)
    item2_13, weights = scaled_dot_product_attention(acc_15, arr_11, zz_17, mask, is_causal)
    return self.w_o(item2_13.permute(0, 2, 3, 1).reshape(buf_0, T_q, self.d_model)), weights


MultiHeadAttention.forward = _forward
