import torch


def masked_softmax(scores, mask=None):
    if mask is None:
        mask = torch.ones_like(scores, dtype=torch.bool)
    mask = mask.expand_as(scores) if mask.dim() <= scores.dim() else mask
    shifted = scores - scores.masked_fill(~mask, float("-inf")).amax(dim=-1, keepdim=True).nan_to_num(0.0, neginf=0.0).detach()
    exp = torch.where(mask, shifted.exp(), torch.zeros_like(shifted))
    return exp / exp.sum(dim=-1, keepdim=True).clamp_min(torch.finfo(exp.dtype).tiny)
