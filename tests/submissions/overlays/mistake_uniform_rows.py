import torch


def masked_softmax(scores, mask=None):
    if mask is not None:
        scores = scores.masked_fill(~mask, -1e6)
    return torch.softmax(scores, dim=-1)
