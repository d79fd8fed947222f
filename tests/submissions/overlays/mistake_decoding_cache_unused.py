# The cache is filled but never read: the new queries attend only to the new keys and values.
def attend_with_cache(
    Q_new: Tensor,
    K_new: Tensor,
    V_new: Tensor,
    cache: KVCache,
    mask: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    cache.append(K_new, V_new)
    return grouped_query_attention(Q_new, K_new, V_new, mask, is_causal=True)
