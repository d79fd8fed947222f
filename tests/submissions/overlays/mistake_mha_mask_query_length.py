# MultiHeadAttention that gives a 3-D padding mask its head axis by reshaping it to the query's length, as if
# keys were always the queries (self-attention): with T_q != T_k it does not fit. Only cross-attention shows it.
_reference_mha_forward = MultiHeadAttention.forward


def _forward_mask_by_query_length(self, query, key, value, mask=None, is_causal=False):
    B, T, _ = query.shape
    if mask is not None and mask.dim() == 3:
        mask = mask.reshape(B, 1, 1, T)  # (B, 1, T): one row of keys per sequence
    return _reference_mha_forward(self, query, key, value, mask, is_causal)


MultiHeadAttention.forward = _forward_mask_by_query_length
