# MultiHeadAttention that passes a 3-D mask on as it is: (B, 1, T_k) lines up with (H, T_q, T_k),
# so it fails to broadcast, or, when B == num_heads, silently masks head b with sequence b's padding.
def _forward_without_head_axis(self, query, key, value, mask=None, is_causal=False):
    B, T_q, _ = query.shape
    H, d_head = self.num_heads, self.d_head
    q = self.w_q(query).view(B, T_q, H, d_head).transpose(1, 2)
    k = self.w_k(key).view(B, -1, H, d_head).transpose(1, 2)
    v = self.w_v(value).view(B, -1, H, d_head).transpose(1, 2)
    out, weights = scaled_dot_product_attention(q, k, v, mask, is_causal)
    out = out.transpose(1, 2).reshape(B, T_q, self.d_model)
    return self.w_o(out), weights


MultiHeadAttention.forward = _forward_without_head_axis
