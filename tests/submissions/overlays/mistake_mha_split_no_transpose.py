# A newcomer's classic: heads split with view(B, H, T, d_head), no transpose, so each "head" holds pieces
# of several positions; merged back the same way. Shapes are right, values are not.
def _forward(self, query, key, value, mask=None, is_causal=False):
    B, T_q, _ = query.shape
    q = self.w_q(query).view(B, self.num_heads, T_q, self.d_head)
    k = self.w_k(key).view(B, self.num_heads, -1, self.d_head)
    v = self.w_v(value).view(B, self.num_heads, -1, self.d_head)
    if mask is not None and mask.dim() == 3:
        mask = mask.unsqueeze(1)
    out, weights = scaled_dot_product_attention(q, k, v, mask, is_causal)
    return self.w_o(out.reshape(B, T_q, self.d_model)), weights


MultiHeadAttention.forward = _forward
