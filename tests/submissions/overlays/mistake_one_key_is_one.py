# A softmax over a single key is 1: a special case for T_k = 1 that forgets the mask. A masked single key must
# get 0 (the row is fully masked). Only a draw with one key and a mask shows it (issue 35).
_reference_softmax = masked_softmax


def masked_softmax(scores, mask=None):
    if scores.size(-1) == 1:  # one key: all the weight is on it
        return torch.ones_like(scores)
    return _reference_softmax(scores, mask)
