# A bottom-right causal mask (named where is_causal is used) and a d_k read after squeeze() (wrong
# only for d_k = 1, on an input without any mask): the causal mistake must not be blamed there.
import torch


def causal_mask(T_q, T_k=None, *, device=None):
    T_k = T_q if T_k is None else T_k
    return torch.ones(T_q, T_k, dtype=torch.bool, device=device).tril(diagonal=T_k - T_q)


_reference_scale = scale_scores


def scaled_dot_product_attention(Q, K, V, mask=None, is_causal=False):
    d_k = Q.squeeze().shape[-1]
    scores = _reference_scale(attention_scores(Q, K), d_k)
    if is_causal:
        causal = causal_mask(Q.size(-2), K.size(-2), device=Q.device)
        mask = causal if mask is None else mask & causal
    weights = masked_softmax(scores, mask)
    return attention_output(weights, V), weights
