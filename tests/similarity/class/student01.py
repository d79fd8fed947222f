import math

import torch
import torch.nn.functional as F
from torch import nn


def attention_scores(Q, K):
    return Q @ K.transpose(-2, -1)


def scale_scores(scores, d_k):
    return scores / d_k ** 0.5


def causal_mask(T_q, T_k=None, *, device=None):
    if T_k is None:
        T_k = T_q
    i = torch.arange(T_q, device=device).unsqueeze(1)
    j = torch.arange(T_k, device=device).unsqueeze(0)
    return (j - i) <= 0


def padding_mask(valid_lens, T_k):
    if valid_lens.dim() == 1:
        valid_lens = valid_lens[:, None]
    key_positions = torch.arange(T_k, device=valid_lens.device)
    return key_positions < valid_lens[..., None]


def masked_softmax(scores, mask=None):
    if mask is not None:
        scores = scores.masked_fill(~mask, float('-inf'))
    weights = F.softmax(scores.float(), dim=-1).type_as(scores)
    return weights.nan_to_num(0.0) if mask is None else torch.where(mask, weights, torch.zeros_like(weights))


def attention_output(weights, V):
    out = weights.matmul(V)
    return out


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
