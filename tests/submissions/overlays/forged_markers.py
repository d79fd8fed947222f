import sys

# Values the grader must not trust: wire markers holding values of the wrong type (forged by patching
# the worker's copy of wire.py), an integer no float can hold, and a lone surrogate in an exception message.
_forge = None
_wire = sys.modules.get("wire")
_reference_scores, _reference_causal = attention_scores, causal_mask


def _forged_encode(value, _encode=_wire.encode if _wire else None):
    global _forge
    kind, _forge = _forge, None
    if kind == "float":
        return b'{"body": {"ok": true, "value": {"$float": [1]}}, "sizes": []}', []
    if kind == "tuple":
        return b'{"body": {"ok": true, "value": {"$tuple": 5}}, "sizes": []}', []
    return _encode(value)


if _wire is not None:
    _wire.encode = _forged_encode


def attention_scores(Q, K):
    global _forge
    _forge = "float"
    return _reference_scores(Q, K)


def causal_mask(T_q, T_k=None, *, device=None):
    global _forge
    _forge = "tuple"
    return _reference_causal(T_q, T_k, device=device)


def scale_scores(scores, d_k):
    raise ValueError("cannot scale \ud800 today")


def dot_product_variance(d_k, num_samples=10000, generator=None):
    return 10**400
