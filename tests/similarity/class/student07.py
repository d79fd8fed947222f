import math

import torch
import torch.nn.functional as F
from torch import nn


def attention_scores(Q, K):
    kt = K.mT
    return Q @ kt


def scale_scores(scores, d_k):
    return scores * torch.rsqrt(torch.tensor(float(d_k)))


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
    return torch.einsum("...qk,...kv->...qv", weights, V)


def scaled_dot_product_attention(Q, K, V, mask=None, is_causal=False):
    d_k = Q.size(-1)
    scores = scale_scores(attention_scores(Q, K), d_k)
    if is_causal:
        causal = causal_mask(Q.size(-2), K.size(-2), device=Q.device)
        mask = causal if mask is None else mask & causal
    weights = masked_softmax(scores, mask)
    return attention_output(weights, V), weights


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
        B, T_q, _ = query.shape
        H, d_head = self.num_heads, self.d_head
        q = self.w_q(query).view(B, T_q, H, d_head).transpose(1, 2)
        k = self.w_k(key).view(B, -1, H, d_head).transpose(1, 2)
        v = self.w_v(value).view(B, -1, H, d_head).transpose(1, 2)
        if mask is not None and mask.dim() == 3:
            mask = mask.unsqueeze(1)
        out, weights = scaled_dot_product_attention(q, k, v, mask, is_causal)
        out = out.transpose(1, 2).reshape(B, T_q, self.d_model)
        return self.w_o(out), weights


def dot_product_variance(d_k, num_samples=10000, generator=None):
    samples = [torch.randn(num_samples, d_k, generator=generator) for _ in range(2)]
    prod = samples[0].mul(samples[1]).sum(1)
    return prod.var().item()
