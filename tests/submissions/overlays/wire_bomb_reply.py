import sys

# Replies forged by patching the worker's copy of wire.py: a few hundred MB of JSON ('[],' repeated),
# a header nested 100,000 levels deep, a tensor of absurd shape, and nulls where tensors belong.
_forge = None
_wire = sys.modules.get("wire")
_reference_output, _reference_scale = attention_output, scale_scores
_reference_causal, _reference_padding = causal_mask, padding_mask


def _forged_encode(value, _encode=_wire.encode if _wire else None):
    global _forge
    kind, _forge = _forge, None
    if kind == "flood":
        return b'{"body": {"ok": true, "value": [' + b"[]," * (100 << 20) + b'[]]}, "sizes": []}', []
    if kind == "deep":
        return b'{"body": {"ok": true, "value": ' + b"[" * 100_000 + b"]" * 100_000 + b'}, "sizes": []}', []
    if kind == "shape":
        body = b'{"ok": true, "value": {"$tensor": 0, "dtype": "float32", "shape": [4611686018427387904, 4]}}'
        return b'{"body": ' + body + b', "sizes": [16]}', [b"\0" * 16]
    if kind == "null":
        return b'{"body": {"ok": true, "value": null, "grads": null, "ops": null}, "sizes": []}', []
    return _encode(value)


if _wire is not None:
    _wire.encode = _forged_encode


def attention_output(weights, V):
    global _forge
    _forge = "flood"
    return _reference_output(weights, V)


def scale_scores(scores, d_k):
    global _forge
    _forge = "deep"
    return _reference_scale(scores, d_k)


def causal_mask(T_q, T_k=None, *, device=None):
    global _forge
    _forge = "shape"
    return _reference_causal(T_q, T_k, device=device)


def padding_mask(valid_lens, T_k):
    global _forge
    _forge = "null"
    return _reference_padding(valid_lens, T_k)
