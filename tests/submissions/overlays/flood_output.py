print("x" * 20_000_000)  # 20 MB at import
_reference_causal_mask = causal_mask


_flooded = []


def causal_mask(T_q, T_k=None, *, device=None):
    if not _flooded:  # 100 MB in the first call of each worker: a flood, not the slow code the timing check judges
        _flooded.append(True)
        for _ in range(1000):
            print("y" * 100_000)
    return _reference_causal_mask(T_q, T_k, device=device)
