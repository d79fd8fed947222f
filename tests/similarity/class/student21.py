import math

import torch
import torch.nn.functional as F
from torch import nn


def attention_scores(Q, K):
    return torch.matmul(Q, K.swapaxes(-1, -2))


def scale_scores(scores, d_k):
    return scores * torch.rsqrt(torch.tensor(float(d_k)))


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
    weights = torch.softmax(scores, dim=-1)
    return weights if mask is None else weights * mask


def attention_output(weights, V):
    return torch.matmul(weights, V)


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
    a = torch.randn((num_samples, d_k), generator=generator)
    b = torch.randn((num_samples, d_k), generator=generator)
    dots = torch.einsum('nd,nd->n', a, b)
    return float(dots.var())
