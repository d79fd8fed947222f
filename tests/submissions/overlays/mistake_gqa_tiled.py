# Key/value heads tiled with repeat ([k0, k1, k0, k1]) instead of grouped with repeat_interleave ([k0, k0, k1, k1]):
# query head h is paired with key/value head h % H_kv.
def grouped_query_attention(
    Q: Tensor,
    K: Tensor,
    V: Tensor,
    mask: Tensor | None = None,
    is_causal: bool = False,
) -> tuple[Tensor, Tensor]:
    H, H_kv = Q.size(-3), K.size(-3)
    if H % H_kv != 0:
        raise ValueError(f"{H} query heads cannot be shared out among {H_kv} key/value heads")
    tiles = [1] * (K.dim() - 3) + [H // H_kv, 1, 1]
    return scaled_dot_product_attention(Q, K.repeat(*tiles), V.repeat(*tiles), mask, is_causal)
