import math

import torch
import torch.nn.functional as F
from torch import nn


def attention_scores(Q, K):
    return Q @ K.transpose(-2, -1)


def scale_scores(scores, d_k):
    factor = math.sqrt(float(d_k))
    return scores.div(factor)


def causal_mask(T_q, T_k=None, *, device=None):
    if T_k is None:
        T_k = T_q
    return torch.ones(T_q, T_k, dtype=torch.bool, device=device).triu()


def padding_mask(valid_lens, T_k):
    if valid_lens.ndim == 1:
        valid_lens = valid_lens.unsqueeze(1)
    steps = torch.arange(T_k, device=valid_lens.device).expand(*valid_lens.shape, T_k)
    return steps < valid_lens[..., None]


def masked_softmax(scores, mask=None):
    if mask is None:
        return torch.softmax(scores, dim=-1)
    filled = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return torch.softmax(filled, dim=-1) * mask


def attention_output(weights, V):
    return torch.einsum("...qk,...kv->...qv", weights, V)


def scaled_dot_product_attention(Q, K, V, mask=None, is_causal=False):
    T_q, T_k = Q.shape[-2], K.shape[-2]
    allowed = mask
    if is_causal:
        tri = causal_mask(T_q, T_k, device=Q.device)
        allowed = tri if allowed is None else (allowed & tri)
    raw = attention_scores(Q, K)
    attn = masked_softmax(scale_scores(raw, Q.shape[-1]), allowed)
    return attn @ V, attn


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
            b, t, _ = x.shape
            return x.view(b, t, self.num_heads, self.d_head).transpose(1, 2)

        q, k, v = heads(self.w_q(query)), heads(self.w_k(key)), heads(self.w_v(value))
        if mask is not None and mask.dim() == 3:
            mask = mask.unsqueeze(1)
        ctx, attn = scaled_dot_product_attention(q, k, v, mask, is_causal)
        b, _, t, _ = ctx.shape
        ctx = ctx.transpose(1, 2).reshape(b, t, self.d_model)
        return self.w_o(ctx), attn


def dot_product_variance(d_k, num_samples=10000, generator=None):
    x, y = torch.randn(2, num_samples, d_k, generator=generator)
    return torch.var(torch.sum(x * y, dim=1)).item()
