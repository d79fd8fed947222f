# The causal mask is flipped (causal_mask fails its own checks) and masked_softmax divides by
# (sum + 0.1), a mistake with no name. On inputs without is_causal only masked_softmax matters:
# the hint must point at masked_softmax, recomputed from the student's own functions, never at causal_mask.
import torch


def causal_mask(T_q, T_k=None, *, device=None):
    T_k = T_q if T_k is None else T_k
    return torch.ones(T_q, T_k, dtype=torch.bool, device=device).triu()


def masked_softmax(scores, mask=None):
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    row_max = scores.amax(dim=-1, keepdim=True)
    row_max = row_max.masked_fill(row_max == float("-inf"), 0.0).detach()
    exp = torch.exp(scores - row_max)
    return exp / (exp.sum(dim=-1, keepdim=True) + 0.1)
