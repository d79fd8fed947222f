import torch

_reference_sdpa = scaled_dot_product_attention


def scaled_dot_product_attention(Q, K, V, mask=None, is_causal=False):
    # vectorised where a mask is given; one batch element at a time in the commonest call, without one
    if mask is not None or is_causal or Q.dim() < 3:
        return _reference_sdpa(Q, K, V, mask, is_causal)
    pairs = [_reference_sdpa(Q[b], K[b], V[b]) for b in range(Q.size(0))]
    return torch.stack([p[0] for p in pairs]), torch.stack([p[1] for p in pairs])
