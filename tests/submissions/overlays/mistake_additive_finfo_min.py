# Hugging Face's additive mask, (1 - mask) * finfo(dtype).min: the masked scores all become finfo.min
# (the score itself is lost in the rounding), so a fully masked row is uniform instead of zeros.
import torch


def masked_softmax(scores, mask=None):
    if mask is not None:
        scores = scores + (1.0 - mask.to(scores.dtype)) * torch.finfo(scores.dtype).min
    return torch.softmax(scores, dim=-1)
