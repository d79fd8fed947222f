"""The grading's wall-clock limits (a check's, pytest-timeout's; the whole grading's budget) are the student's
time-out only where the student's own time took at least a ``busy_factor``-th of them, as a call's limit is: else the
machine's load, or the grader's own work, spent them, and the check is the grader's error (which a batch grades
again), never the student's lost points.

Before, a check whose grader side was starved of a CPU past its 120 s lost its points as "far too slow or stuck" on
honest code (the blockwise part's memory check, graded beside a full test run: bench/blockwise_mistakes.py), and a
grading whose budget the machine's load spent charged every check still to run to the student. Here the grader's side
is slowed by sleeping in a check of a folder of its own (the student's calls take milliseconds), and the student's by
a scale_scores that sleeps 0.3 s a call (sleeping is the student's own time): the real sandbox runs each.

The grader's time answering the student's questions (the reference standing in for a failed function, in a check's
rerun) is the student's own: a submission that asks costly questions spends its own budget, not the machine's
(tests/submissions/time/costly_questions.py, found by a tester who had not read these tests). And a check ended by its
limit in the middle of a call takes the worker with it: the next check never reads that call's late answer as its own.
"""

from __future__ import annotations

import json
import time

import pytest
import torch

from autograder.config import load_settings
from autograder.grade import _pytest
from autograder.plugin import TIMED_OUT, GradingPlugin
from autograder.sandbox.client import Sandbox
from autograder.sandbox.protocol import GraderBusy
from autograder.status import Status
from tests.attacks import overlaid
from tests.helpers import BIN, REFERENCE, SUBMISSIONS, limits, run

SLOW = "\n\ndef scale_scores(scores, d_k):\n    import time\n\n    time.sleep(0.3)\n    return scores / d_k ** 0.5\n"
CHECK = """import time

import pytest
import torch


@pytest.mark.check(function="scale_scores", category="values", points=1, exercises=(), picture=None)
def test_scale_values(loaded):
    for _ in range({calls}):
        assert loaded.run("scale_scores", torch.ones(2, 3), 4).ok
    time.sleep({grader})  # the grader's own work, however long it takes
"""
LIMIT = 2.0  # the check's limit here: the student's own time must reach a sixth of it (busy_factor 6)


def _outcomes(tmp_path, source: str, calls: int, grader: float, checks: str = CHECK) -> dict:
    """The check above (or ``checks``), run with a 2 s limit on the student's ``source`` in a real sandbox: each
    check's outcome, by name."""
    folder = tmp_path / "checks"
    folder.mkdir()
    (folder / "pytest.ini").write_text("[pytest]\npython_files = check_*.py\naddopts = --import-mode=importlib\n")
    # a module name of its own: pytest keeps an imported check module by its name for the rest of this process
    (folder / f"check_{tmp_path.name}.py").write_text(checks.format(calls=calls, grader=grader))
    path = tmp_path / "attention.py"
    path.write_text(source)
    with Sandbox(path, limits(memory_mb=2048, load_timeout=10)) as box:
        assert box.load().ok
        plugin = GradingPlugin(lambda: box, load_settings(None, environ={}), 0, "cpu")
        code, output = _pytest(plugin, "--timeout", str(LIMIT), checks=folder)
    assert len(plugin.outcomes) == checks.count("@pytest.mark.check"), output[-3000:]  # every check ran
    return plugin.outcomes


@pytest.mark.timeout(60)
def test_a_check_the_graders_side_kept_past_its_limit_is_the_graders_error(tmp_path):
    """One call of milliseconds, then 3 s of the grader's own work: past the check's 2 s with no student time to
    speak of, the grader's error naming the busy machine (before: failed as the student's code "far too slow")."""
    outcome = _outcomes(tmp_path, REFERENCE.read_text(), calls=1, grader=3)["scale_values"]
    assert outcome.status is Status.GRADER_ERROR, outcome
    assert "ran out of its 2 s by the clock" in outcome.message and "too busy" in outcome.message, outcome.message


@pytest.mark.timeout(60)
def test_a_check_the_students_calls_kept_past_its_limit_is_the_students_time_out(tmp_path):
    """Calls of 0.3 s each, one after the other: past the check's 2 s with the student's own time nearly all of it,
    the student's time-out, as before."""
    outcome = _outcomes(tmp_path, REFERENCE.read_text() + SLOW, calls=50, grader=0)["scale_values"]
    assert (outcome.status, outcome.message) == (Status.FAILED, TIMED_OUT), outcome


BUDGET = 6.0  # the grading's budget here: the student's own time must reach 1 s of it


def _sandbox(tmp_path, source: str) -> Sandbox:
    path = tmp_path / "attention.py"
    path.write_text(source)
    budgeted = limits(memory_mb=2048, load_timeout=10, grading_budget=BUDGET)
    return Sandbox(path, budgeted, deadline=time.monotonic() + BUDGET)


@pytest.mark.timeout(60)
def test_a_budget_the_machine_spent_is_the_graders_error(tmp_path):
    """The budget spent while the student's code had milliseconds of it (the grader waited here): the next call is
    the grader's error (GraderBusy), not the student's time-out."""
    with _sandbox(tmp_path, REFERENCE.read_text()) as box:
        assert box.load().ok
        assert box.call("scale_scores", (torch.ones(2, 3), 4), timeout=2).ok
        time.sleep(BUDGET)
        with pytest.raises(GraderBusy, match="the grading ran out of its 6 s by the clock"):
            box.call("scale_scores", (torch.ones(2, 3), 4), timeout=2)


@pytest.mark.timeout(60)
def test_a_budget_the_students_calls_spent_is_the_students_time_out(tmp_path):
    """Calls of 0.3 s each until the budget is spent: the student's own time is nearly all of it, so the call it
    ends in is the student's time-out, as before."""
    with _sandbox(tmp_path, REFERENCE.read_text() + SLOW) as box:
        assert box.load().ok
        for _ in range(100):
            reply = box.call("scale_scores", (torch.ones(2, 3), 4), timeout=2)
            if not reply.ok:
                break
    assert reply.hung and "time budget of 6 s ran out" in reply.describe(), reply.describe()


# a call the check's limit ends while the student's code sleeps in it, then a check of another function
TWO_CHECKS = """import pytest
import torch


@pytest.mark.check(function="scale_scores", category="values", points=1, exercises=(), picture=None)
def test_scale_values(loaded):
    loaded.run("scale_scores", torch.ones(2, 3), 4)


@pytest.mark.check(function="attention_scores", category="values", points=1, exercises=(), picture=None)
def test_scores_values(loaded):
    Q, K = torch.ones(2, 3, 4), torch.full((2, 5, 4), 2.0)
    value = loaded.run("attention_scores", Q, K).value
    if not (isinstance(value, torch.Tensor) and torch.equal(value, Q @ K.transpose(-2, -1))):
        raise RuntimeError(f"the answer of another call: {{value!r}}")
"""
SLEEPS = "\n\ndef scale_scores(scores, d_k):\n    import time\n\n    time.sleep(3)\n    return scores / d_k ** 0.5\n"


@pytest.mark.timeout(60)
def test_a_call_its_checks_limit_ends_leaves_no_answer_for_the_next_check(tmp_path):
    """scale_scores sleeps 3 s in a check whose limit is 2 s (the student's time-out), then the next check calls
    attention_scores and gets its own answer (before: the worker lived on, and the next check read scale_scores' late
    answer as attention_scores')."""
    found = _outcomes(tmp_path, REFERENCE.read_text() + SLEEPS, calls=1, grader=0, checks=TWO_CHECKS)
    assert (found["scale_values"].status, found["scale_values"].message) == (Status.FAILED, TIMED_OUT)
    assert found["scores_values"].status is Status.PASSED, found["scores_values"]


QUESTIONS = "[limits]\ncall_timeout = 2.0\ncheck_timeout = 6.0\ngrading_budget = 12.0\n"


@pytest.mark.timeout(120)
def test_costly_questions_spend_the_students_own_budget(tmp_path):
    """An attention that asks the grader about a second of float16 work a question, three a round, in every rerun with
    the reference standing in for its wrong attention_scores: the grader's time answering is the student's own, so the
    budget it spends (12 s here) is the student's time-out, not a grader's error that keeps the grade out of the class's
    files (before: sdpa_matches_torch and timing_cpu the grader's errors, "the student's code had 0.2 s of its own
    time"). Run as an instructor runs it, sdpa-grade grade."""
    config, out = tmp_path / "quick.toml", tmp_path / "results.json"
    config.write_text(QUESTIONS)
    submission = overlaid(tmp_path, "costly_questions", SUBMISSIONS / "time")
    done = run([str(BIN / "sdpa-grade"), "grade", str(submission), "--config", str(config), "--json", str(out)])
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(out.read_text())
    outcomes = {test["name"].split(": ")[1]: test["extra_data"]["outcome"] for test in result["tests"]}
    assert "grader_error" not in result and "grader-error" not in outcomes.values(), outcomes
    assert outcomes["scores_values"] == outcomes["sdpa_matches_torch"] == "failed", outcomes
