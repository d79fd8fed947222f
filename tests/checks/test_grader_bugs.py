"""A bug in the grader's own code where a failed check gathers its evidence (the plugin's substituted rerun, the
reference's answers to the worker's questions: checks/substitution.py) is the grader's error, which a batch grades
again: never read as "no evidence", a failure without its cause that charges the student a carried loss.

The bugs are injected: a copy of the hidden check sdpa_dtypes in a folder of its own whose helper raises TypeError
when the check runs again with the reference's answers, and a substitution helper that raises TypeError. What the
student's code raises stays evidence (the reference refusing the student's arguments: no answer, still a failure).
"""

from __future__ import annotations

import shutil

import pytest

from autograder.checks import substitution
from autograder.config import load_settings
from autograder.grade import CHECKS, _pytest
from autograder.plugin import GradingPlugin, Outcome
from autograder.status import Status
from tests.helpers import with_overlay
from tests.in_process import InProcess

SETTINGS = load_settings(environ={})
SEED = 3
SELECTED = "scale_values or sdpa_dtypes"  # scale_scores fails a check of its own first: it may stand in


def _graded(overlay: str, checks=CHECKS) -> dict[str, Outcome]:
    namespace: dict = {}
    exec(compile(with_overlay(overlay), "attention.py", "exec"), namespace)  # noqa: S102 - the suite's own submissions
    plugin = GradingPlugin(lambda: InProcess(namespace), SETTINGS, SEED, "cpu")
    _pytest(plugin, "-k", SELECTED, checks=checks)
    return plugin.outcomes


def test_a_bug_in_a_checks_rerun_is_the_graders_error(tmp_path):
    """The check's own helper raising TypeError only in the substituted rerun makes the check the grader's error,
    naming the TypeError, not a failure that builds on nothing."""
    for name in ("pytest.ini", "check_1_pieces.py", "check_3_sdpa.py"):
        shutil.copy(CHECKS / name, tmp_path / name)
    source = (tmp_path / "check_3_sdpa.py").read_text()
    start = source.index("def _dtype_case(")  # the helper each case of sdpa_dtypes runs: the bug after its first line
    end = source.index("\n", start) + 1
    bug = '    if type(loaded).__name__ == "Substituted":\n        None + 1  # injected: TypeError in the rerun\n'
    (tmp_path / "check_3_sdpa.py").write_text(source[:end] + bug + source[end:])
    outcome = _graded("mistake_divide_by_dk", tmp_path)["sdpa_dtypes"]
    assert outcome.status is Status.GRADER_ERROR, outcome
    assert "TypeError" in outcome.message and "answered by the reference" in outcome.message, outcome.message


def test_a_bug_in_the_substitutions_answers_is_the_graders_error(monkeypatch):
    """A TypeError in the grader's code that answers the worker's questions (not the reference refusing the student's
    arguments) makes the check the grader's error."""

    def broken(name, args):
        raise TypeError("an injected bug in the grader's answering code")

    monkeypatch.setattr(substitution, "_value", broken)
    outcome = _graded("mistake_divide_by_dk")["sdpa_dtypes"]
    assert outcome.status is Status.GRADER_ERROR, outcome
    assert "injected bug" in outcome.message, outcome.message


def test_the_reference_refusing_the_students_arguments_is_no_answer():
    """The reference raising on what the student's code passed it (here: a call it does not take) is no answer,
    and the check fails as the student's, without a carried loss."""
    with pytest.raises(substitution.Refused):
        substitution._called("scale_scores", [1, 2, 3])
    with pytest.raises(substitution.Refused):
        substitution._value("masked_softmax", ["not a tensor", None])
    table = {"masked_softmax": {"calls": [], "vjps": []}}
    assert substitution.answer([{"name": "masked_softmax", "args": [1.5, None]}], table) == 0
    assert table["masked_softmax"]["calls"] == []


# An attention that scales each row of scores with its own call of a wrong scale_scores: run again with scale_scores
# answered by the reference, its questions (one per batch, head and query) need a table of answers over the wire's
# bound (wire.bounded, 64 KiB of header).
ROW_BY_ROW = """

def scale_scores(scores, d_k):
    return scores / d_k


def scaled_dot_product_attention(Q, K, V, mask=None, is_causal=False):
    scores = attention_scores(Q, K)
    B, H, T_q, _ = scores.shape
    rows = [scale_scores(scores[b, h, i], Q.size(-1)) for b in range(B) for h in range(H) for i in range(T_q)]
    weights = masked_softmax(torch.stack(rows).view(scores.shape), mask)
    return attention_output(weights, V), weights
"""


def test_the_students_questions_over_the_wires_bound_are_no_evidence(sandbox):
    """A substituted call whose table of answers the student's own questions grew past the wire's bound is the
    student's (a declared bound crossed: StudentFault, the rerun no evidence), never the grader's error; the worker
    still answers the next call."""
    import torch

    from autograder.checks.student import Student, StudentFault
    from autograder.checks.substitution import Substituted

    with sandbox(with_overlay(None) + ROW_BY_ROW) as box:
        assert box.load().ok
        student = Student(box, timeout=30)
        Q, K, V = (torch.randn(6, 6, T, d, dtype=torch.float64) for T, d in ((16, 4), (5, 4), (5, 3)))
        with pytest.raises(StudentFault, match="asked more than can be answered"):
            Substituted(student, ("scale_scores",)).run("scaled_dot_product_attention", Q, K, V)
        assert student.run("scale_scores", torch.ones(2), 4).value.tolist() == [0.25, 0.25]
