import math

import torch
import torch.nn.functional as F
from torch import nn


def attention_scores(Q, K):
    return Q @ K.transpose(1, 2)


def scale_scores(scores, d_k):
    factor = math.sqrt(float(d_k))
    return scores.div(factor)


def causal_mask(T_q, T_k=None, *, device=None):
    if T_k is None:
        T_k = T_q
    return torch.tril(torch.ones(T_q, T_k, dtype=torch.bool, device=device))


def padding_mask(valid_lens, T_k):
    if valid_lens.ndim == 1:
        valid_lens = valid_lens.unsqueeze(1)
    steps = torch.arange(T_k, device=valid_lens.device).expand(*valid_lens.shape, T_k)
    return steps < valid_lens[..., None]


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
    return torch.matmul(weights, V)


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
