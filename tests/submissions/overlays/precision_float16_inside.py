# Correct math, but the softmax runs in float16: errors at float16 rounding level, named as precision loss.
_reference_softmax = masked_softmax


def masked_softmax(scores, mask=None):
    return _reference_softmax(scores.half(), mask).to(scores.dtype)
