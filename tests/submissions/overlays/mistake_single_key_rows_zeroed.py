# Fully masked rows found with an off-by-one: a row with at most one allowed key is taken for padding and zeroed.
# A row with exactly one allowed key must put all its weight there. Random masks held such a row on some draws
# only (issue 35).
_reference_softmax = masked_softmax


def masked_softmax(scores, mask=None):
    weights = _reference_softmax(scores, mask)
    if mask is None:
        return weights
    empty = mask.expand_as(scores).sum(dim=-1, keepdim=True) <= 1  # meant: no allowed key
    return weights.masked_fill(empty, 0.0)
