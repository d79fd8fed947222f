# BERT's additive mask: (1 - mask) * -10000 added to the scores. Fine where a row allows some key; a row
# that allows none is shifted as a whole, and softmax ignores a shift: it gets its unmasked softmax, not zeros.
import torch


def masked_softmax(scores, mask=None):
    if mask is not None:
        scores = scores + (1.0 - mask.to(scores.dtype)) * -10000.0
    return torch.softmax(scores, dim=-1)
