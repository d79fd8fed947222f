import math

import torch
import torch.nn.functional as F
from torch import nn


def attention_scores(Q, K):
    return torch.matmul(Q, K.transpose(-1, -2))


def scale_scores(scores, d_k):
    return scores * torch.rsqrt(torch.tensor(float(d_k)))


def causal_mask(T_q, T_k=None, *, device=None):
    if T_k is None:
        T_k = T_q
    m = torch.ones((T_q, T_k), device=device).tril()
    return m.bool()


def padding_mask(valid_lens, T_k):
    if valid_lens.ndim == 1:
        valid_lens = valid_lens.unsqueeze(1)
    steps = torch.arange(T_k, device=valid_lens.device).expand(*valid_lens.shape, T_k)
    return steps < valid_lens[..., None]


def masked_softmax(scores, mask=None):
    if mask is None:
        return torch.softmax(scores, dim=-1)
    scores = scores.masked_fill(~mask, float('-inf'))
    row_max = scores.amax(dim=-1, keepdim=True)
    row_max = row_max.masked_fill(row_max == float('-inf'), 0.0).detach()
    exp = torch.exp(scores - row_max)
    total = exp.sum(dim=-1, keepdim=True)
    total = torch.where(total > 0, total, torch.ones_like(total))
    return exp / total


def attention_output(weights, V):
    return torch.matmul(weights, V)


def scaled_dot_product_attention(Q, K, V, mask=None, is_causal=False):
    scores = attention_scores(Q, K)
    scores = scale_scores(scores, Q.shape[-1])
    if is_causal:
        cm = causal_mask(Q.shape[-2], K.shape[-2], device=Q.device)
        if mask is None:
            mask = cm
        else:
            mask = mask & cm
    weights = masked_softmax(scores, mask)
    output = attention_output(weights, V)
    return output, weights


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_head = d_model // num_heads
        for name in ('w_q', 'w_k', 'w_v', 'w_o'):
            setattr(self, name, nn.Linear(d_model, d_model, bias=bias))

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
    q = torch.randn(num_samples, d_k, generator=generator)
    k = torch.randn(num_samples, d_k, generator=generator)
    return (q * k).sum(dim=-1).var().item()
