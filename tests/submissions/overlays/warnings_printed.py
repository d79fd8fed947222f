import warnings

warnings.warn("a warning at import must cost nothing")
_reference_softmax = masked_softmax


def masked_softmax(scores, mask=None):
    warnings.warn("a warning in every call must cost nothing", UserWarning)
    print("debug print from the student")
    return _reference_softmax(scores, mask)
