import sys
import time

# Every reply that attention_output is part of starts late and trickles: its first byte comes at 0.6 s, then
# the rest in eight pieces 0.2 s apart, complete at about 2.2 s. Sized for the 2 s call limit of
# tests/sandbox/test_time_bounds.py (the figures: first byte at 9 s of a 10 s limit, then a byte a second). A
# grader that starts the reply's deadline again when its first byte arrives takes the whole reply, past the limit.
_wire = sys.modules.get("wire")
_late = False
_reference_output = attention_output


def _late_send(sock, value, _send=_wire.send if _wire else None):
    global _late
    if not _late:
        return _send(sock, value)
    _late = False
    header, blobs = _wire.encode(value)
    message = len(header).to_bytes(8, "big") + header + b"".join(blobs)
    time.sleep(0.6)
    sock.sendall(message[:1])
    step = -(-(len(message) - 1) // 8)
    for start in range(1, len(message), step):
        time.sleep(0.2)
        sock.sendall(message[start : start + step])


if _wire is not None:
    _wire.send = _late_send


def attention_output(weights, V):
    global _late
    _late = True
    return _reference_output(weights, V)
