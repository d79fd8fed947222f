import torch


def masked_softmax(scores, mask=None):
    if mask is None:
        return torch.softmax(scores, dim=-1)
    filled = torch.where(mask, scores, torch.tensor(float("-inf"), dtype=scores.dtype))
    weights = torch.softmax(filled, dim=-1)
    return torch.where(mask, weights, torch.zeros((), dtype=scores.dtype))
