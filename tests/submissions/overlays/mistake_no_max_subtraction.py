import torch


def masked_softmax(scores, mask=None):
    exp = torch.exp(scores)
    if mask is not None:
        exp = exp * mask
    total = exp.sum(dim=-1, keepdim=True)
    return exp / torch.where(total > 0, total, torch.ones_like(total))
