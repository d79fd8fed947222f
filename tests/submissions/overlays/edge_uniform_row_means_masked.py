# Zeroes every row whose weights are all equal, taking it for a fully masked row. With one key
# (T_k = 1) every row is "uniform" (a single weight of 1): only T_k = 1 shows it.
import torch


def masked_softmax(scores, mask=None):
    if mask is None:
        return torch.softmax(scores, dim=-1)
    weights = torch.softmax(scores.masked_fill(~mask, torch.finfo(scores.dtype).min), dim=-1)
    uniform = (weights == weights[..., :1]).all(dim=-1, keepdim=True)
    return torch.where(uniform, torch.zeros_like(weights), weights)
