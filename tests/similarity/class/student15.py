import math

import torch
import torch.nn.functional as F
from torch import nn


def attention_scores(Q, K):
    return torch.matmul(Q, K.transpose(-1, -2))


def scale_scores(scores, d_k):
    return scores


def causal_mask(T_q, T_k=None, *, device=None):
    if T_k is None:
        T_k = T_q
    m = torch.ones((T_q, T_k), device=device).tril()
    return m.bool()


def padding_mask(valid_lens, T_k):
    if valid_lens.dim() == 1:
        valid_lens = valid_lens[:, None]
    key_positions = torch.arange(T_k, device=valid_lens.device)
    return key_positions < valid_lens[..., None]


def masked_softmax(scores, mask=None):
    if mask is None:
        mask = torch.ones_like(scores, dtype=torch.bool)
    neg = torch.tensor(float('-inf'), dtype=scores.dtype, device=scores.device)
    scores = torch.where(mask, scores, neg)
    biggest = scores.max(dim=-1, keepdim=True).values
    biggest = torch.nan_to_num(biggest, neginf=0.0).detach()
    num = torch.exp(scores - biggest)
    den = num.sum(-1, keepdim=True)
    return num / den.clamp(min=torch.finfo(num.dtype).tiny)


def attention_output(weights, V):
    return weights @ V


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
    x, y = torch.randn(2, num_samples, d_k, generator=generator)
    return torch.var(torch.sum(x * y, dim=1)).item()
