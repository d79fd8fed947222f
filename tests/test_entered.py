"""Which student functions a call entered: recorded in the worker, validated on the grader's side (a hint's evidence)."""

from __future__ import annotations

import types

import torch

from autograder.sandbox import worker
from autograder.sandbox.runner import reply_from


def _module():
    def masked_softmax(scores, mask=None):
        return torch.softmax(scores, dim=-1)

    alias = masked_softmax  # called through another name: still the same function

    def attention_output(weights, V):
        return weights @ V

    def scaled_dot_product_attention(Q, K, V, mask=None, is_causal=False):
        weights = alias(Q @ K.transpose(-2, -1))
        return weights @ V, weights  # never calls attention_output

    return types.SimpleNamespace(masked_softmax=masked_softmax, attention_output=attention_output,
                                 scaled_dot_product_attention=scaled_dot_product_attention)


def test_a_call_reports_the_functions_it_entered():
    """The reply names the target and every module function it called (through an alias too), and no other."""
    x = torch.randn(2, 3, 4)
    reply = worker._call(_module(), {"target": "scaled_dot_product_attention", "args": [x, x, x]})
    assert reply["entered"] == ["masked_softmax", "scaled_dot_product_attention"]


def test_the_record_ends_with_the_call():
    """The profile hook is the caller's again after the call, even when the student's function raises."""
    import sys

    module = types.SimpleNamespace(broken=lambda: 1 / 0)
    try:
        worker._call(module, {"target": "broken", "args": []})
    except ZeroDivisionError:
        pass
    assert sys.getprofile() is None


def test_entered_is_checked_at_the_border():
    """A reply whose list of entered functions is not a short list of names is the student's failed call."""
    for forged in ("masked_softmax", [1, 2], ["x" * 1000], ["f"] * 5000):
        reply = reply_from({"ok": True, "value": None, "entered": forged}, 0.0)
        assert not reply.ok and reply.error == "WireError", forged
    assert reply_from({"ok": True, "value": None, "entered": ["masked_softmax"]}, 0.0).entered == ["masked_softmax"]
