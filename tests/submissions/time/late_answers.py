import sys
import time

# Every answer comes 1.5 s late, each within the 2 s call limit of tests/sandbox/test_time_bounds.py (the issue's
# figures: 9 s late under a 10 s limit made one grading take 529 s, about 8 s honest). No call times out, so
# only a budget for the whole grading bounds the time the grading holds its slot.
_wire = sys.modules.get("wire")


def _late_send(sock, value, _send=_wire.send if _wire else None):
    time.sleep(1.5)
    return _send(sock, value)


if _wire is not None:
    _wire.send = _late_send
