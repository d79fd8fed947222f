# A decoding step masked with is_causal=True: the causal triangle aligned top-left, as for the full pass, so new
# query i sees keys 0..i of the cache instead of 0..len(cache) - T_new + i.
def attend_with_cache(
    Q_new: Tensor,
    K_new: Tensor,
    V_new: Tensor,
    cache: KVCache,
    mask: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    K_all, V_all = cache.append(K_new, V_new)
    return grouped_query_attention(Q_new, K_all, V_all, mask, is_causal=True)
