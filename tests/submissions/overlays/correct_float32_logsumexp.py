# Trax: exp(x - logsumexp(x)), the log-sum-exp taken in float32 inside float64 work, the dtype kept.
# Correct math: full marks, and no precision hint.
import torch


def masked_softmax(scores, mask=None):
    work = scores.float()
    if mask is not None:
        work = work.masked_fill(~mask, torch.finfo(torch.float32).min)
    weights = torch.exp(work - torch.logsumexp(work, dim=-1, keepdim=True))
    if mask is not None:
        weights = weights * mask
    return weights.to(scores.dtype)
