__all__ = [
    "attention_scores",
    "scale_scores",
    "causal_mask",
    "padding_mask",
    "masked_softmax",
    "attention_output",
    "scaled_dot_product_attention",
    "MultiHeadAttention",
    "dot_product_variance",
]
