# diffusers' Attention.get_attention_scores, ported: the heads folded into the batch, the scores made by baddbmm into
# a torch.empty tensor (beta=0) allocated on every call, then the softmax and bmm, unfolded again. Vectorised;
# its reshapes and allocation are per-call constant work. Rows with no allowed key are zeroed instead of NaN.
import torch


def scaled_dot_product_attention(Q, K, V, mask=None, is_causal=False):
    *lead, T_q, d_k = Q.shape
    T_k, d_v = K.size(-2), V.size(-1)
    query, key = Q.reshape(-1, T_q, d_k), K.reshape(-1, T_k, d_k)  # (B * H, T, d)
    baddbmm_input = torch.empty(query.shape[0], T_q, T_k, dtype=query.dtype, device=query.device)
    scores = torch.baddbmm(baddbmm_input, query, key.transpose(-1, -2), beta=0, alpha=d_k**-0.5)
    scores = scores.reshape(*lead, T_q, T_k)
    if is_causal:
        causal = torch.ones(T_q, T_k, dtype=torch.bool, device=Q.device).tril()
        mask = causal if mask is None else mask & causal
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    dead = torch.isinf(scores).all(dim=-1, keepdim=True)  # no allowed key on the row
    probs = scores.masked_fill(dead, 0.0).softmax(dim=-1).masked_fill(dead, 0.0)
    lead = probs.shape[:-2]
    out = torch.bmm(probs.reshape(-1, T_q, T_k), V.expand(*lead, T_k, d_v).reshape(-1, T_k, d_v))
    return out.reshape(*lead, T_q, d_v), probs
