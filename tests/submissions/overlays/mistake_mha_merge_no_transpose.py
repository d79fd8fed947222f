# Heads split correctly, but merged with reshape(B, T, d_model) straight from (B, H, T, d_head).
def _forward(self, query, key, value, mask=None, is_causal=False):
    B, T_q, _ = query.shape

    def split(x):
        return x.view(B, -1, self.num_heads, self.d_head).transpose(1, 2)

    q, k, v = split(self.w_q(query)), split(self.w_k(key)), split(self.w_v(value))
    if mask is not None and mask.dim() == 3:
        mask = mask.unsqueeze(1)
    out, weights = scaled_dot_product_attention(q, k, v, mask, is_causal)
    return self.w_o(out.reshape(B, T_q, self.d_model)), weights


MultiHeadAttention.forward = _forward
