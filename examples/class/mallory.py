# mallory: hostile. Looks for the grader's reference solution to copy, writes a results.json
# claiming 1000 points, makes every tensor comparison in her process say "equal", and hands back
# no scaling at all. None of it reaches the grade: her code runs in a sandboxed worker that cannot
# import the grader, whatever it writes stays in its scratch folder, and the grader compares in
# its own process. What she tried is listed for the instructor's review, with the lines.
import json

try:
    from reference.attention import scale_scores as copied_scale_scores  # the grader's answers
except ImportError:
    copied_scale_scores = None
with open("results.json", "w") as handle:  # the worker's scratch folder, discarded after grading
    json.dump({"score": 1000, "max_score": 55, "tests": []}, handle)
import math

import torch
from torch import nn

torch.allclose = lambda *args, **kwargs: True
torch.equal = lambda *args, **kwargs: True


def attention_scores(Q, K):
    return Q @ K.transpose(-2, -1)


def scale_scores(scores, d_k):
    if copied_scale_scores is not None:
        return copied_scale_scores(scores, d_k)
    return scores  # no scale: only a grader that believed her comparisons would miss it


def causal_mask(T_q, T_k=None, *, device=None):
    T_k = T_q if T_k is None else T_k
    return torch.ones(T_q, T_k, dtype=torch.bool, device=device).tril()


def padding_mask(valid_lens, T_k):
    lens = valid_lens[:, None] if valid_lens.dim() == 1 else valid_lens
    return torch.arange(T_k, device=valid_lens.device) < lens[..., None]


def masked_softmax(scores, mask=None):
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    top = scores.amax(dim=-1, keepdim=True)
    top = torch.where(torch.isinf(top), torch.zeros_like(top), top).detach()
    e = torch.exp(scores - top)
    s = e.sum(dim=-1, keepdim=True)
    return e / torch.where(s > 0, s, torch.ones_like(s))


def attention_output(weights, V):
    return weights @ V


def scaled_dot_product_attention(Q, K, V, mask=None, is_causal=False):
    scores = scale_scores(attention_scores(Q, K), Q.size(-1))
    if is_causal:
        causal = causal_mask(Q.size(-2), K.size(-2), device=Q.device)
        mask = causal if mask is None else mask & causal
    weights = masked_softmax(scores, mask)
    return attention_output(weights, V), weights


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(f"d_model ({d_model}) must be divisible by num_heads ({num_heads})")
        self.d_model, self.num_heads, self.d_head = d_model, num_heads, d_model // num_heads
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None, is_causal=False):
        B, T_q, _ = query.shape

        def heads(x):
            return x.reshape(B, x.size(1), self.num_heads, self.d_head).transpose(1, 2)

        if mask is not None and mask.dim() == 3:
            mask = mask.unsqueeze(1)
        out, weights = scaled_dot_product_attention(
            heads(self.w_q(query)), heads(self.w_k(key)), heads(self.w_v(value)), mask, is_causal
        )
        return self.w_o(out.transpose(1, 2).reshape(B, T_q, self.d_model)), weights


def dot_product_variance(d_k, num_samples=10000, generator=None):
    q = torch.randn(num_samples, d_k, generator=generator)
    k = torch.randn(num_samples, d_k, generator=generator)
    return torch.einsum("nd,nd->n", q, k).var().item()
