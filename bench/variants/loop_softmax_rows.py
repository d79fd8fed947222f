import torch

_reference_softmax = masked_softmax


def masked_softmax(scores, mask=None):
    # one query row at a time
    if mask is not None:
        mask = mask.expand_as(scores)
    rows = [_reference_softmax(scores[..., i : i + 1, :], None if mask is None else mask[..., i : i + 1, :])
            for i in range(scores.size(-2))]
    return torch.cat(rows, dim=-2)
