import sys
import time

# A reply trickled one byte at a time (patching the worker's copy of wire.py): every single read
# of it returns within the call timeout, the whole reply comes far later.
_wire = sys.modules.get("wire")
_trickle = False
_reference_output = attention_output


def _trickled_send(sock, value, _send=_wire.send if _wire else None):
    global _trickle
    if not _trickle:
        return _send(sock, value)
    _trickle = False
    header, blobs = _wire.encode(value)
    message = len(header).to_bytes(8, "big") + header + b"".join(blobs)
    for index in range(len(message)):
        sock.sendall(message[index:index + 1])
        time.sleep(0.1)


if _wire is not None:
    _wire.send = _trickled_send


def attention_output(weights, V):
    global _trickle
    _trickle = True
    return _reference_output(weights, V)
