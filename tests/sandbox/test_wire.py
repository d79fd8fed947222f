"""The wire format: plain tensors and data only, and every malformed message refused."""

from __future__ import annotations

import json
import socket
import struct

import pytest
import torch

from autograder.sandbox.student_side import wire


def roundtrip(value):
    a, b = socket.socketpair()
    with a, b:
        wire.send(a, value)
        return wire.receive(b)


@pytest.mark.parametrize(
    "dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.bool, torch.int64]
)
def test_tensors_round_trip_bit_for_bit(dtype):
    """Every supported dtype comes back with the same shape and bits, non-contiguous input included."""
    tensor = (torch.randn(3, 5) * 10).to(dtype).t()
    back = roundtrip({"x": (tensor, [1, 2.5, "s", None, float("nan")])})
    assert back["x"][0].dtype == dtype and back["x"][0].shape == (5, 3)
    assert torch.equal(back["x"][0], tensor)
    assert back["x"][1][:4] == [1, 2.5, "s", None]


def test_tensor_subclasses_are_refused():
    """A tensor subclass is not sent: it could carry behaviour, not just data."""

    class Sneaky(torch.Tensor):
        pass

    with pytest.raises(wire.WireError, match="subclass"):
        wire.encode(torch.zeros(2).as_subclass(Sneaky))


def test_arbitrary_objects_are_refused():
    """Only plain data crosses: no pickled objects, classes or functions."""
    with pytest.raises(wire.WireError, match="cannot be sent"):
        wire.encode(object())


@pytest.mark.parametrize(
    "body, sizes, blob, problem",
    [
        ({"$tensor": 0, "dtype": "float32", "shape": [4]}, [8], b"\0" * 8, "does not fit"),
        ({"$tensor": 0, "dtype": "object", "shape": [1]}, [8], b"\0" * 8, "malformed tensor"),
        ({"$tensor": 3, "dtype": "float32", "shape": [1]}, [4], b"\0" * 4, "missing blob"),
        ({"$tensor": 0, "dtype": "float32", "shape": [-1]}, [4], b"\0" * 4, "malformed tensor"),
    ],
)
def test_malformed_messages_are_refused(body, sizes, blob, problem):
    """A worker that lies about a tensor's size or type gets a WireError, not a crash."""
    header = json.dumps({"body": body, "sizes": sizes}).encode()
    with pytest.raises(wire.WireError, match=problem):
        wire.decode(header, lambda size: blob[:size])


def _raw(header: bytes, blobs: bytes = b"") -> socket.socket:
    """A socket from which one message with this exact header (and blobs) can be read."""
    a, b = socket.socketpair()
    a.sendall(struct.pack(">Q", len(header)) + header[: 1 << 20] + blobs)
    a.close()
    return b


@pytest.mark.parametrize(
    "header, problem",
    [
        (b'{"body": [' + b"[]," * 30000 + b'[]], "sizes": []}', "header of"),
        (b'{"body": ' + b"[" * 100_000 + b"]" * 100_000 + b', "sizes": []}', "header of"),
        (b'{"body": ' + b"[" * 9 + b"]" * 9 + b', "sizes": []}', "nested more than 8"),
        (
            b'{"body": {"$tensor": 0, "dtype": "float32", "shape": [4611686018427387904, 4]}, "sizes": [16]}',
            "malformed tensor",
        ),
        (b'{"body": {"$tensor": 0, "dtype": "float32", "shape": [' + b"1," * 20 + b'1]}, "sizes": [4]}', "dimensions"),
        (b'{"body": null, "sizes": [2000000000]}', "blobs of"),
    ],
)
def test_hostile_headers_are_refused_before_decoding(header, problem):
    """Oversized, too deeply nested or absurd headers are a WireError, read no further than their length."""
    with _raw(header, b"\0" * 16) as sock, pytest.raises(wire.WireError, match=problem):
        wire.receive(sock)


def test_deepest_real_message_fits():
    """The grader's own messages stay within the nesting bound (a call with a tuple of tensors and gradients)."""
    value = {"ok": True, "value": (torch.zeros(2), torch.zeros(2)), "grads": [torch.zeros(1)], "ops": []}
    back = roundtrip({"op": "call", "args": [value]})
    assert torch.equal(back["args"][0]["value"][0], torch.zeros(2))


@pytest.mark.parametrize(
    "answer",
    [
        {"ok": True, "value": None, "ops": None},
        {"ok": True, "grads": [None]},
        {"ok": True, "grads": "x"},
        ["not", "a", "dict"],
    ],
)
def test_malformed_answers_are_the_workers_fault(answer):
    """An answer with nulls or wrong kinds where lists of names or tensors belong becomes a failed reply."""
    from autograder.sandbox.protocol import reply_from

    reply = reply_from(answer, 0.0)
    assert not reply.ok and reply.error == "WireError"


def test_a_trickled_message_misses_the_deadline():
    """The deadline bounds the whole message: one byte every 50 ms never completes a 1 s deadline."""
    import threading
    import time

    a, b = socket.socketpair()
    header, _ = wire.encode({"ok": True, "value": "x" * 100})
    message = struct.pack(">Q", len(header)) + header

    def trickle():
        for index in range(len(message)):
            try:
                a.sendall(message[index : index + 1])
            except OSError:
                return
            time.sleep(0.05)

    sender = threading.Thread(target=trickle, daemon=True)
    sender.start()
    with pytest.raises(socket.timeout):  # the whole message takes 7 s to trickle: read whole, it would not raise
        wire.receive(b, deadline=time.monotonic() + 1.0)
    a.close()
    b.close()


def _forged(body: str) -> bytes:
    header = ('{"body": ' + body + ', "sizes": []}').encode()
    return struct.pack(">Q", len(header)) + header


@pytest.mark.parametrize(
    "body",
    [
        '{"$float": [1]}',
        '{"$float": "x"}',
        '{"$tuple": 5}',
        '{"$tuple": null}',
        '{"$float": {"a": 1}}',
        "1" + "0" * 400,
        "-1" + "0" * 40,
        '{"$tensor": "0", "dtype": "float32", "shape": [1]}',
    ],
    ids=["float-list", "float-word", "tuple-int", "tuple-null", "float-dict", "int-10e400", "int-huge", "tensor-str"],
)
def test_forged_markers_and_numbers_are_wire_errors(body):
    """A marker with a value of the wrong type, or an integer that fits no float or int64, is a WireError."""
    a, b = socket.socketpair()
    with a, b:
        a.sendall(_forged(body))
        with pytest.raises(wire.WireError):
            wire.receive(b)


def test_strings_that_cannot_be_encoded_are_replaced():
    """A lone surrogate in a string (or a key) arrives replaced, so every later encode of it works."""
    a, b = socket.socketpair()
    with a, b:
        a.sendall(_forged('{"message": "bad \\ud800 text", "\\udfff": 1}'))
        got = wire.receive(b)
    assert got["message"].encode("utf-8") and all(key.encode("utf-8") for key in got)
    assert "bad" in got["message"] and "text" in got["message"]


class _Row(list):
    pass


def test_every_kind_of_value_encodes_as_it_always_has():
    """Exact types and subclasses alike (torch.Size a tuple, a list or dict subclass, bools beside ints), byte for
    byte: the header of a mixed value, then the same value back."""
    value = {
        "op": "time",
        1: [True, 0, -(1 << 63), None, "é"],
        "shape": torch.Size([2, 3]),
        "row": _Row([1.5, 2]),
        "inf": float("-inf"),
        "nested": {"$shm": 64, "dtype": "float32", "shape": [128, 1, 8, 8]},
    }
    header, blobs = wire.encode(value)
    assert json.loads(header) == {
        "body": {
            "op": "time",
            "1": [True, 0, -(1 << 63), None, "é"],
            "shape": {"$tuple": [2, 3]},
            "row": [1.5, 2],
            "inf": {"$float": "-inf"},
            "nested": {"$shm": 64, "dtype": "float32", "shape": [128, 1, 8, 8]},
        },
        "sizes": [],
    }
    assert blobs == []
    back = roundtrip(value)
    assert back["1"] == [True, 0, -(1 << 63), None, "é"] and type(back["1"][0]) is bool
    assert back["shape"] == (2, 3) and back["inf"] == float("-inf") and back["nested"] == value["nested"]


# Messages over the wire's bounds between the grader and a real worker (the sandbox fixture, tests/conftest.py):
# the grader's own oversized request is the grader's error and never reaches the worker; a request the worker cannot
# read is answered, not a silent death; a student's result over the bounds is the student's failure, worded.
OVERSIZED = """
import torch

def attention_scores(Q, K):
    return list(range(20000))  # a header of about 120 kB: over the wire's 64 kB

def scale_scores(scores, d_k):
    return scores / d_k ** 0.5
"""


def test_the_graders_oversized_request_is_the_graders_error_and_the_worker_lives(sandbox):
    """A request whose header is over the bound is refused on the grader's side (RequestRefused, a GraderFault),
    before anything is written: the worker neither dies nor misses a message, and the next call is answered."""
    from autograder.sandbox.protocol import GraderFault

    with sandbox(OVERSIZED) as box:
        assert box.load().ok
        started = box.restarts  # the workers started so far: the one that loaded the submission
        with pytest.raises(GraderFault, match="header of") as refused:
            box.call("scale_scores", (torch.ones(2), list(range(20000))), timeout=10)
        after = box.call("scale_scores", (torch.ones(2), 4), timeout=10)
    assert type(refused.value).__name__ == "RequestRefused"
    assert after.ok and torch.equal(after.value, torch.full((2,), 0.5)) and box.restarts == started


def test_a_request_the_worker_cannot_read_is_answered(sandbox):
    """Bytes over the wire's header bound sent to the worker by hand get an answer that says so, not a dead worker
    (WorkerDied); the grader's next call starts a fresh worker and is answered."""
    with sandbox(OVERSIZED) as box:
        assert box.load().ok
        _, conn = box._child
        conn.sendall(struct.pack(">Q", wire.MAX_HEADER + 1))
        answer = wire.receive(conn, deadline=__import__("time").monotonic() + 10)
        box._kill_child()  # as _exchange does on that answer: the rest of the message is still on the socket
        after = box.call("scale_scores", (torch.ones(2), 4), timeout=10)
    assert answer["ok"] is False and answer["error"] == "UnreadableRequest", answer
    assert "could not read the grader's request" in answer["message"] and "header of" in answer["message"]
    assert after.ok


def test_a_students_result_over_the_bound_is_the_students_failure_worded(sandbox):
    """A result whose message would break the wire's bound fails that call as the student's, saying the result is
    too large, and the worker answers the next call."""
    from autograder.sandbox.protocol import Failure

    with sandbox(OVERSIZED) as box:
        assert box.load().ok
        reply = box.call("attention_scores", (torch.ones(2), torch.ones(2)), timeout=10)
        after = box.call("scale_scores", (torch.ones(2), 4), timeout=10)
    assert not reply.ok and reply.failure is not Failure.WORKER_DIED, reply
    assert "too large to send" in reply.message and "header of" in reply.message, reply.message
    assert after.ok
