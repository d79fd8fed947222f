# Skips the causal mask for a single query, as decoding code with bottom-right semantics does;
# under this assignment's top-left rule query 0 sees key 0 only. Only T_q = 1 shows it.
_reference_sdpa = scaled_dot_product_attention


def scaled_dot_product_attention(Q, K, V, mask=None, is_causal=False):
    return _reference_sdpa(Q, K, V, mask, is_causal and Q.size(-2) > 1)
