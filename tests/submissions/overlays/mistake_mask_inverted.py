_reference_softmax = masked_softmax


def masked_softmax(scores, mask=None):
    return _reference_softmax(scores, None if mask is None else ~mask)
