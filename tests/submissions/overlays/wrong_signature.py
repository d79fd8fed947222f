_reference_sdpa = scaled_dot_product_attention


def scaled_dot_product_attention(Q, K, V):  # no mask, no is_causal
    return _reference_sdpa(Q, K, V)
