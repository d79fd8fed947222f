"""The worker's op record, seen from inside: it covers threads the submission starts."""

from __future__ import annotations

import threading
import types

import torch
import torch.nn.functional as F

from autograder.sandbox.student_side import recording, serving


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
