# The scale computed once from d_model (self.scale = d_model ** -0.5), not from the head size.
def _forward(self, query, key, value, mask=None, is_causal=False):
    B, T_q, _ = query.shape

    def split(x):
        return x.view(B, -1, self.num_heads, self.d_head).transpose(1, 2)

    q, k, v = split(self.w_q(query)), split(self.w_k(key)), split(self.w_v(value))
    if mask is not None and mask.dim() == 3:
        mask = mask.unsqueeze(1)
    if is_causal:
        causal = causal_mask(q.size(-2), k.size(-2), device=q.device)
        mask = causal if mask is None else mask & causal
    weights = masked_softmax(attention_scores(q, k) * self.d_model**-0.5, mask)
    out = attention_output(weights, v)
    return self.w_o(out.transpose(1, 2).reshape(B, T_q, self.d_model)), weights


MultiHeadAttention.forward = _forward
