import math

import torch
import torch.nn.functional as F
from torch import nn


def attention_scores(Q, K):
    return torch.matmul(Q, K.transpose(-1, -2))


def scale_scores(scores, d_k):
    return scores / d_k


def causal_mask(T_q, T_k=None, *, device=None):
    if T_k is None:
        T_k = T_q
    return torch.tril(torch.ones(T_q, T_k, dtype=torch.bool, device=device))


def padding_mask(valid_lens, T_k):
    lens = valid_lens.reshape(valid_lens.shape[0], -1, 1)
    idx = torch.arange(T_k, device=valid_lens.device).reshape(1, 1, T_k)
    return idx < lens


def masked_softmax(scores, mask=None):
    drop = None if mask is None else ~mask
    if drop is not None:
        scores = scores.masked_fill(drop, float('-inf'))
    row_max = scores.amax(dim=-1, keepdim=True)
    row_max = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max)).detach()
    exp = torch.exp(scores - row_max)
    total = exp.sum(dim=-1, keepdim=True)
    return exp / torch.where(total > 0, total, torch.ones_like(total))


def attention_output(weights, V):
    out = weights.matmul(V)
    return out


def scaled_dot_product_attention(Q, K, V, mask=None, is_causal=False):
    d = Q.size(-1)
    if is_causal:
        c = causal_mask(Q.size(-2), K.size(-2), device=Q.device)
        mask = c if mask is None else torch.logical_and(mask, c)
    w = masked_softmax(scale_scores(attention_scores(Q, K), d), mask)
    return attention_output(w, V), w


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
        B, Tq, D = query.shape
        Tk = key.shape[1]
        H = self.num_heads
        q = self.w_q(query).reshape(B, Tq, H, -1).permute(0, 2, 1, 3)
        k = self.w_k(key).reshape(B, Tk, H, -1).permute(0, 2, 1, 3)
        v = self.w_v(value).reshape(B, Tk, H, -1).permute(0, 2, 1, 3)
        if mask is not None and mask.ndim == 3:
            mask = mask[:, None]
        out, w = scaled_dot_product_attention(q, k, v, mask=mask, is_causal=is_causal)
        out = out.permute(0, 2, 1, 3).contiguous().view(B, Tq, D)
        return self.w_o(out), w


def dot_product_variance(d_k, num_samples=10000, generator=None):
    q = torch.randn(num_samples, d_k, generator=generator)
    k = torch.randn(num_samples, d_k, generator=generator)
    return (q * k).sum(dim=-1).var().item()
