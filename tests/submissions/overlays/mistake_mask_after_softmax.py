import torch


def masked_softmax(scores, mask=None):
    weights = torch.softmax(scores, dim=-1)
    return weights if mask is None else weights * mask
