print("x" * 20_000_000)  # 20 MB at import
_reference_causal_mask = causal_mask


def causal_mask(T_q, T_k=None, *, device=None):
    for _ in range(1000):
        print("y" * 100_000)
    return _reference_causal_mask(T_q, T_k, device=device)
