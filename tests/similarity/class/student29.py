import math

import torch
import torch.nn.functional as F
from torch import nn


def attention_scores(Q, K):
    kt = K.mT
    return Q @ kt


def scale_scores(scores, d_k):
    return scores / math.sqrt(d_k)


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
    return torch.einsum("...qk,...kv->...qv", weights, V)


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
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)

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
    a = torch.randn((num_samples, d_k), generator=generator)
    b = torch.randn((num_samples, d_k), generator=generator)
    dots = torch.einsum('nd,nd->n', a, b)
    return float(dots.var())


# Heads merged feature-major: (B, H, T, d_head) -> (B, T, d_head, H) -> (B, T, d_model) interleaves the heads.
def _forward(self, query, key, value, mask=None, is_causal=False):
    B, T_q, _ = query.shape

    def split(x):
        return x.view(B, -1, self.num_heads, self.d_head).transpose(1, 2)

    q, k, v = split(self.w_q(query)), split(self.w_k(key)), split(self.w_v(value))
    if mask is not None and mask.dim() == 3:
        mask = mask.unsqueeze(1)
    out, weights = scaled_dot_product_attention(q, k, v, mask, is_causal)
    return self.w_o(out.permute(0, 2, 3, 1).reshape(B, T_q, self.d_model)), weights


MultiHeadAttention.forward = _forward
