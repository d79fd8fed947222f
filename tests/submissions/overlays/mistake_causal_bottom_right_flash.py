# flash-attention's reference aligns the causal mask bottom-right (query i sees keys j <= i + T_k - T_q),
# written with index arithmetic and a True-means-drop mask; the assignment (and is_causal=True) aligns top-left.
import torch


def causal_mask(T_q, T_k=None, *, device=None):
    T_k = T_q if T_k is None else T_k
    row = torch.arange(T_q, device=device)[:, None]
    col = torch.arange(T_k, device=device)[None, :]
    drop = col > row + T_k - T_q  # True = masked out
    return ~drop
