"""Which student functions a call entered: recorded in the worker, validated on the grader's side
(a hint's evidence)."""

from __future__ import annotations

import types

import torch

from autograder.sandbox.protocol import reply_from
from autograder.sandbox.student_side import serving

SOURCE = """
import torch


def masked_softmax(scores, mask=None):
    return torch.softmax(scores, dim=-1)


def attention_output(weights, V):
    return weights @ V


def scaled_dot_product_attention(Q, K, V, mask=None, is_causal=False):
    weights = masked_softmax(Q @ K.transpose(-2, -1))
    return weights @ V, weights  # never calls attention_output
"""


def test_a_call_reports_the_functions_it_entered(tmp_path):
    """The reply names every function of the submission the call reached by its name, and no other."""
    path = tmp_path / "attention.py"
    path.write_text(SOURCE)
    module = serving._load(str(path), guard=False)  # here: the code guard is the sandbox's (test_fused_attention)
    x = torch.randn(2, 3, 4)
    reply = serving._call(module, {"target": "scaled_dot_product_attention", "args": [x, x, x]})
    assert reply["entered"] == ["masked_softmax"]
    assert (
        module.masked_softmax.__name__ == "masked_softmax"
        and module.masked_softmax.__code__.co_name == "masked_softmax"
    )


def test_a_notebook_namespace_is_recorded_too():
    """On the nbgrader path the functions live in the notebook's globals: calls between them are recorded there."""
    namespace: dict = {}
    exec(compile(SOURCE, "notebook", "exec"), namespace)  # noqa: S102 - our own source
    module = types.SimpleNamespace(
        **{k: v for k, v in namespace.items() if k in ("masked_softmax", "scaled_dot_product_attention")}
    )
    x = torch.randn(2, 3, 4)
    reply = serving._call(module, {"target": "scaled_dot_product_attention", "args": [x, x, x]})
    assert reply["entered"] == ["masked_softmax"]
    assert namespace["masked_softmax"] is module.masked_softmax  # put back after the call


def test_the_record_ends_with_the_call(tmp_path):
    """The functions are the submission's own again after the call, even when the call raises."""
    path = tmp_path / "attention.py"
    path.write_text(SOURCE + "\n\ndef broken(x):\n    masked_softmax(x)\n    return 1 / 0\n")
    module = serving._load(str(path), guard=False)  # here: the code guard is the sandbox's (test_fused_attention)
    original = module.masked_softmax
    try:
        serving._call(module, {"target": "broken", "args": [torch.randn(2, 2)]})
    except ZeroDivisionError:
        pass
    assert module.masked_softmax is original


def test_entered_is_checked_at_the_border():
    """A reply whose list of entered functions is not a short list of names is the student's failed call."""
    for forged in ("masked_softmax", [1, 2], ["x" * 1000], ["f"] * 5000):
        reply = reply_from({"ok": True, "value": None, "entered": forged}, 0.0)
        assert not reply.ok and reply.error == "WireError", forged
    assert reply_from({"ok": True, "value": None, "entered": ["masked_softmax"]}, 0.0).entered == ["masked_softmax"]


def test_functions_look_like_themselves_while_recorded(tmp_path):
    """During a call the recorded functions keep their names and docstrings: code that lists its own functions by
    ``__name__`` (a notebook did) sees the same names as without the record."""
    path = tmp_path / "attention.py"
    path.write_text(
        SOURCE.replace(
            "    return weights @ V\n\n\ndef scaled",
            '    """Weights times values."""\n    return weights @ V\n\n\ndef scaled',
        )
        + """

def attention_scores(Q, K):
    return [masked_softmax.__name__, attention_output.__name__, attention_output.__doc__]
"""
    )
    module = serving._load(str(path), guard=False)  # here: the code guard is the sandbox's (test_fused_attention)
    reply = serving._call(module, {"target": "attention_scores", "args": [torch.ones(1), torch.ones(1)]})
    assert reply["ok"] and reply["value"] == ["masked_softmax", "attention_output", "Weights times values."], reply


def test_a_function_standing_in_answers_what_the_table_holds_and_asks_the_rest(tmp_path):
    """With masked_softmax standing in (``substitute``), a call of it on arguments the grader's table holds gets the
    table's answer, through autograd with the table's vector-Jacobian product, and the student's own is not run; one
    on other arguments is asked about (once per call) and done by the student's own; a call with nothing left to ask
    is complete."""
    path = tmp_path / "attention.py"
    path.write_text(SOURCE)
    module = serving._load(str(path), guard=False)
    x = torch.randn(2, 3, 4, dtype=torch.float64)
    scores = x @ x.transpose(-2, -1)
    request = {"target": "scaled_dot_product_attention", "args": [x, x, x], "grad": [0, 1, 2]}
    request["grad_outputs"] = [torch.ones(2, 3, 4, dtype=torch.float64), torch.zeros(2, 3, 3, dtype=torch.float64)]
    first = serving._call(module, {**request, "substitute": {"names": ["masked_softmax"], "calls": [], "vjps": []}})
    assert [q["name"] for q in first["asked"]] == ["masked_softmax"]
    assert torch.equal(first["asked"][0]["args"][0], scores) and first["asked"][0]["args"][1] is None
    uniform = torch.full((2, 3, 3), 1 / 3, dtype=torch.float64)  # the grader's answer, not a softmax of the scores
    table = {"names": ["masked_softmax"], "calls": [["masked_softmax", [scores, None], uniform]], "vjps": []}
    second = serving._call(module, {**request, "substitute": table})
    assert [("upstream" in q) for q in second["asked"]] == [True]  # its backward is asked about next
    upstream = second["asked"][0]["upstream"]
    table["vjps"] = [["masked_softmax", [scores, None], upstream, [torch.zeros_like(scores)]]]
    third = serving._call(module, {**request, "substitute": table})
    assert third["asked"] == []
    assert torch.equal(third["value"][1], uniform)
    assert torch.equal(third["value"][0], uniform @ x)
    assert torch.equal(third["grads"][0], torch.zeros_like(x))  # only through the answered weights: zero
