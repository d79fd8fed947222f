class MultiHeadAttention(MultiHeadAttention):
    """The reference's module, its projections reset by name."""

    def __init__(self, d_model, num_heads, bias=True):
        super().__init__(d_model, num_heads, bias)
        for name in ("w_q", "w_k", "w_v", "w_o"):
            layer = getattr(self, name)
            assert layer.in_features == d_model
