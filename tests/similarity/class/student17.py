import math

import torch
import torch.nn.functional as F
from torch import nn


def attention_scores(Q, K):
    return torch.einsum("...qd,...kd->...qk", Q, K)


def scale_scores(scores, d_k):
    return scores * (1.0 / math.sqrt(d_k))


def causal_mask(T_q, T_k=None, *, device=None):
    if T_k is None:
        T_k = T_q
    i = torch.arange(T_q, device=device).unsqueeze(1)
    j = torch.arange(T_k, device=device).unsqueeze(0)
    return (j - i) <= 0


def padding_mask(valid_lens, T_k):
    positions = torch.arange(T_k, device=valid_lens.device)
    if valid_lens.dim() == 1:
        return (positions[None, :] < valid_lens[:, None])[:, None, :]
    return positions[None, None, :] < valid_lens[:, :, None]


def masked_softmax(scores, mask=None):
    if mask is None:
        mask = torch.ones_like(scores, dtype=torch.bool)
    mask = mask.expand_as(scores) if mask.dim() <= scores.dim() else mask
    shifted = scores - scores.masked_fill(~mask, float('-inf')).amax(dim=-1, keepdim=True).nan_to_num(0.0, neginf=0.0).detach()
    exp = torch.where(mask, shifted.exp(), torch.zeros_like(shifted))
    return exp / exp.sum(dim=-1, keepdim=True).clamp_min(torch.finfo(exp.dtype).tiny)


def attention_output(weights, V):
    return torch.matmul(weights, V)


def scaled_dot_product_attention(Q, K, V, mask=None, is_causal=False):
    if is_causal:
        causal = causal_mask(Q.size(-2), K.size(-2), device=Q.device)
        mask = causal if mask is None else mask & causal
    scores = (Q / math.sqrt(Q.size(-1))) @ K.transpose(-2, -1)
    weights = masked_softmax(scores, mask)
    return weights @ V, weights


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_head = d_model // num_heads
        self.w_q, self.w_k, self.w_v, self.w_o = (nn.Linear(d_model, d_model, bias=bias) for _ in range(4))

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
    samples = [torch.randn(num_samples, d_k, generator=generator) for _ in range(2)]
    prod = samples[0].mul(samples[1]).sum(1)
    return prod.var().item()


_reference_softmax = masked_softmax


def masked_softmax(scores, mask=None):
    return _reference_softmax(scores, None if mask is None else ~mask)
