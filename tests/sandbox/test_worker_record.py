"""The worker's op record, seen from inside: it covers threads the submission starts."""

from __future__ import annotations

import importlib.util
import re
import threading
import types

import torch
import torch.nn.functional as F

from autograder.sandbox.student_side import recording, serving
from autograder.sandbox.student_side.blocking import NotAvailable
from tests.helpers import REFERENCE


def test_fused_attention_in_a_thread_is_recorded():
    """A fused call made in a thread the student's function starts is in that call's record of ops."""
    recording._record_threads()

    def sdpa(Q, K, V):
        result = []
        thread = threading.Thread(target=lambda: result.append(F.scaled_dot_product_attention(Q, K, V)))
        thread.start()
        thread.join()
        return result[0]

    x = torch.randn(1, 4, 3)
    reply = serving._call(types.SimpleNamespace(sdpa=sdpa), {"target": "sdpa", "args": [x, x, x]})
    assert any("scaled_dot_product" in op for op in reply["ops"]), reply["ops"]


def test_torchs_attention_written_in_python_is_refused_by_name():
    """torch.onnx.ops' eager Attention-23 (Q K^T, softmax, @ V in torch's own Python) is found among the callers of
    the first torch function it calls, named by its module and function, and refused there, as a fused kernel is."""
    import torch.onnx.ops

    attention = torch.onnx.ops.aten_decompositions()[torch.ops.onnx.Attention.opset23]

    def attend(Q, K, V):
        return attention(Q, K, V, softmax_precision=1)[0]

    x = torch.randn(1, 1, 4, 3)
    answer = serving._call(types.SimpleNamespace(attend=attend), {"target": "attend", "args": [x, x, x]})
    assert (answer["ok"], answer["error"]) == (False, NotAvailable.__name__)
    assert re.match(r"torch\.onnx\.ops\._impl\.attention_23 is torch's own attention", answer["message"])


def test_the_references_own_attention_records_nothing():
    """The submission's own functions (in attention.py) are its work, whatever their names: nothing is recorded."""
    spec = importlib.util.spec_from_file_location("attention", REFERENCE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    x = torch.randn(2, 4, 3)
    request = {"target": "scaled_dot_product_attention", "args": [x, x, x], "kwargs": {"is_causal": True}}
    assert serving._call(module, request)["ops"] == []
