"""Every honest or mistaken submission of the grading cases (tests/grading_cases.py), graded by real `sdpa-grade
batch` runs (a few parts of the class, each its own batch), scores exactly as stated; the attacks and broken files are
tests/grading/test_grading_hostile.py's."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from autograder.checks import quiz
from autograder.config import load_settings
from tests.graded import Cases, is_work
from tests.grading_cases import ABSENT, CASES, DEDUCTED, DEDUCTED_HERE
from tests.helpers import BIN, REFERENCE, run, total

pytestmark = pytest.mark.slow  # real batches: minutes in all

POINTS = load_settings().points
SCORED = {name: points for name, points in POINTS.items() if name != "timing_gpu"}


# the honest and mistaken submissions of the grading cases graded once, two at a time, as an instructor would, in
# six parts of about 13 (the graded fixture: one batch of all 80 took 152 s); tests/grading/test_grading_hostile.py
# grades the rest
GRADED = Cases(is_work, parts=6)


def load(graded, name):
    return json.loads((graded["out"] / f"{name}.json").read_text())


def test_batch_finished_cleanly(graded):
    """Each part's batch exits 0 and prints the class summary."""
    result = graded["result"]
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Class summary" in result.stdout
    assert "Named mistakes" in result.stdout


@GRADED.having("mistake_divide_by_dk", "mistake_loop_over_queries")
def test_named_mistakes_travel_as_fields(graded):
    """A recognised mistake is a field of its test (extra_data), and the class summary counts it from there."""
    tests = load(graded, "mistake_divide_by_dk")["tests"]
    assert "divide_by_dk" in {test["extra_data"]["mistake"] for test in tests}
    summary = graded["result"].stdout.split("Named mistakes", 1)[1]
    assert "you divided by d_k, not by sqrt(d_k)" in summary
    assert "a Python loop over positions or batches" in summary


@GRADED.each(["mistake_mutation_hidden", "reference", "correct_einsum", "mistake_loop_over_queries",
              "mistake_divide_by_dk"])  # fmt: skip
def test_a_hidden_mutation_is_flagged_and_a_wrong_function_accuses_nobody(graded, name):
    """The class summary lists a mutation the student hid for review; a wrong function's wrong timed answers accuse
    nobody."""
    flagged = graded["result"].stdout.split("Flagged for review", 1)[1]
    assert (f"  {name}: " in flagged) == (name == "mistake_mutation_hidden"), flagged


@GRADED.each(sorted(filter(is_work, CASES)))
def test_submission_scores_exactly(graded, name):
    """The failing checks earn 0, the others full points, and the feedback names the problem."""
    failing, phrases = CASES[name]
    result = load(graded, name)
    checks = [test for test in result["tests"] if test["tags"][0] != quiz.FUNCTION]  # an attention.py: the quiz is 0
    scores = {test["name"].split(": ")[1]: test for test in checks}
    assert set(scores) == set(POINTS)
    expected_zero = set(SCORED) if failing == {"*"} else failing
    for check, points in SCORED.items():
        want = 0 if check in expected_zero else points
        assert scores[check]["score"] == want, f"{check}: {scores[check]['output']}"
        assert scores[check]["max_score"] == points
    assert result["score"] == sum(test["score"] for test in result["tests"])
    assert result["score"] == sum(p for check, p in SCORED.items() if check not in expected_zero)
    for check, phrase in phrases.items():  # a tuple: any one of these phrases
        assert any(p in scores[check]["output"] for p in ((phrase,) if isinstance(phrase, str) else phrase)), scores[
            check
        ]["output"]


# the submissions whose grade the policy changes, graded once more under `[scoring] borrowed = "deduct"` in one real
# batch: those that tests/grading/test_grading_in_process.py cannot score again from its own outcomes (the sandbox's
# alone, or gates measured there only), and one it does, so that the batch is seen reading the policy from its file
DEDUCT = Cases(
    (set(DEDUCTED) - set(DEDUCTED_HERE) | {"mistake_divide_by_dk"}).__contains__,
    parts=1,
    settings='[scoring]\nborrowed = "deduct"\n',
)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", DEDUCT.names)
def test_deduct_takes_the_points_of_before(grading, name):
    """Under "deduct" a failure that builds on another function's mistake costs its points, and the gates it
    closes, as before the policy: exactly the default's losses and DEDUCTED's, and no "Correct once" anywhere."""
    failing = CASES[name][0] | DEDUCTED[name]
    assert not CASES[name][0] & DEDUCTED[name]
    graded = grading(DEDUCT, DEDUCT.part_of(name))
    assert graded["result"].returncode == 0, graded["result"].stderr[-3000:]
    result = graded["results"][name]
    scores = {test["name"].split(": ")[1]: test for test in result["tests"]}
    for check, points in SCORED.items():
        assert scores[check]["score"] == (0 if check in failing else points), f"{check}: {scores[check]['output']}"
        assert "Correct once" not in scores[check]["output"]
    assert result["score"] == sum(p for check, p in SCORED.items() if check not in failing)


@GRADED.each(sorted(filter(is_work, ABSENT)))
def test_no_cause_claimed_without_evidence(graded, name):
    """A hint names a cause only with evidence from the submission: the wrong claims listed in ABSENT never appear."""
    scores = {test["name"].split(": ")[1]: test for test in load(graded, name)["tests"]}
    for check, phrase in ABSENT[name].items():
        assert phrase not in scores[check]["output"], scores[check]["output"]


@GRADED.having("edge_dk_from_squeeze")
def test_failed_value_check_carries_its_evidence(graded):
    """Where the output first differs travels as a structured field too (extra_data.evidence)."""
    tests = {test["name"].split(": ")[1]: test for test in load(graded, "edge_dk_from_squeeze")["tests"]}
    evidence = tests["sdpa_matches_torch"]["extra_data"]["evidence"]
    assert set(evidence) == {"shape", "index", "expected", "got", "error", "allowed"}
    assert evidence["error"] > evidence["allowed"]
    assert tests["scores_shape"]["extra_data"]["evidence"] is None


@GRADED.having("template")
def test_template_scores_zero_with_a_reason(graded):
    """The untouched template earns nothing, integrity and timing included."""
    result = load(graded, "template")
    assert result["score"] == 0
    checks = [t for t in result["tests"] if t["tags"][0] != quiz.FUNCTION]
    assert all(
        "not implemented yet" in t["output"] or "Not awarded yet" in t["output"] or "not run" in t["output"]
        for t in checks
    )
    questions = [t for t in result["tests"] if t not in checks]  # the template's knowledge check, its examples as given
    assert questions and all("is not the expected answer" in t["output"] for t in questions), questions


@GRADED.having("reference")
def test_grades_csv_and_resume(graded):
    """The CSV lists every student; a second run skips them all unless --force."""
    lines = (graded["base"] / "grades.csv").read_text().splitlines()
    assert lines[0] == (
        "student,score,max_score,status,raw_score,late_penalty,submitted_at,hours_late,extension,"
        "graded_file,sha256,checks_sha256,settings_sha256,graded_at"
    )
    assert len(lines) == 1 + len(list(graded["folder"].iterdir()))  # a row per student
    # the same settings (a rerun with other settings regrades everyone: test_provenance.py)
    again = run([str(BIN / "sdpa-grade"), "batch", str(graded["folder"]), "--json-dir", str(graded["out"]),
                 "--config", str(graded["base"] / "fast.toml")])  # fmt: skip
    assert again.returncode == 0
    assert f"{len(lines) - 1} already graded, 0 to grade" in again.stderr


def test_force_grades_again(tmp_path):
    """--force regrades a student already graded; without it a result of today's file, checks and settings is kept
    as it is, and one that says nothing of what graded it is graded again."""
    folder, out = tmp_path / "class", tmp_path / "grades"
    folder.mkdir()
    (folder / "alice.py").write_text(REFERENCE.read_text())
    out.mkdir()
    (out / "alice.json").write_text(json.dumps({"score": 1, "max_score": total(), "tests": []}))
    regraded = run([str(BIN / "sdpa-grade"), "batch", str(folder), "--json-dir", str(out)])
    assert "1 to grade (1 regraded: no provenance 1)" in regraded.stderr, regraded.stderr
    result = json.loads((out / "alice.json").read_text())
    assert result["score"] == sum(SCORED.values())
    (out / "alice.json").write_text(json.dumps({**result, "score": 1}))  # what it graded still holds: kept
    kept = run([str(BIN / "sdpa-grade"), "batch", str(folder), "--json-dir", str(out)])
    assert json.loads((out / "alice.json").read_text())["score"] == 1, kept.stderr
    forced = run([str(BIN / "sdpa-grade"), "batch", str(folder), "--json-dir", str(out), "--force"])
    assert forced.returncode == 0
    assert "(--force: all 1 graded again)" in forced.stderr
    assert json.loads((out / "alice.json").read_text())["score"] == sum(SCORED.values())


def test_interrupted_batch_resumes_without_losing_a_result(tmp_path):
    """Killing a batch mid-way leaves only whole results; running it again grades the rest, and nothing lingers."""
    folder, out = tmp_path / "class", tmp_path / "grades"
    folder.mkdir()
    for index in range(4):
        (folder / f"student{index}.py").write_text(REFERENCE.read_text())
    command = [str(BIN / "sdpa-grade"), "batch", str(folder), "--jobs", "1", "--json-dir", str(out)]
    temporary = tmp_path / "tmp"  # this batch's workers' folders: workers of tests run beside it are not counted
    temporary.mkdir()
    env = {**os.environ, "TMPDIR": str(temporary)}
    batch = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, env=env
    )
    deadline = time.monotonic() + 120
    while not list(out.glob("*.json")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _worker_pids(temporary)  # its zygote, seen by the count below
    os.killpg(batch.pid, signal.SIGKILL)  # as a closed terminal would: the parent and its children at once
    batch.wait()
    first = sorted(path.name for path in out.glob("*.json"))
    assert 1 <= len(first) < 4
    for path in out.glob("*.json"):
        assert json.loads(path.read_text())["score"] == total()  # whole results only
    again = run(command, env=env)
    assert again.returncode == 0
    assert f"{len(first)} already graded, {4 - len(first)} to grade" in again.stderr
    assert all(json.loads((out / f"student{i}.json").read_text())["score"] == total() for i in range(4))
    time.sleep(0.5)
    assert _worker_pids(temporary) == []  # the killed batch's zygote and workers have gone too


def test_ctrl_c_stops_a_batch_with_one_line(tmp_path):
    """Ctrl-C (SIGINT to the terminal's process group) ends a batch with exit 130 and one line, no traceback: how many
    results are saved, where, and that the same command resumes."""
    folder, out = tmp_path / "class", tmp_path / "grades"
    folder.mkdir()
    for index in range(4):
        (folder / f"student{index}.py").write_text(REFERENCE.read_text())
    command = [str(BIN / "sdpa-grade"), "batch", str(folder), "--jobs", "1", "--json-dir", str(out)]
    batch = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 120
    while not list(out.glob("*.json")) and time.monotonic() < deadline:
        time.sleep(0.1)
    os.killpg(batch.pid, signal.SIGINT)
    _, stderr = batch.communicate(timeout=120)
    assert batch.returncode == 130, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("sdpa-grade batch: interrupted: ") and f"of 4 results are saved in {out}" in last, last
    assert "run the same command again" in last


# Loaded at the batch's start (PYTHONPATH): Ctrl-C arrives while its first grading's fork runs the at-fork
# callbacks, where Python only prints an exception ("Exception ignored"), as it did once in CI.
_CTRL_C_IN_FORK = """
import os, signal, sys

def _after_fork_in_parent():
    if sys._getframe(1).f_code.co_name == "grade_all":
        os.kill(os.getpid(), signal.SIGINT)

os.register_at_fork(after_in_parent=_after_fork_in_parent)
"""


def test_ctrl_c_during_a_fork_still_stops_the_batch(tmp_path):
    """A Ctrl-C that lands in an at-fork callback is not lost: exit 130 and the one line, not a batch graded on."""
    folder, out, hook = tmp_path / "class", tmp_path / "grades", tmp_path / "hook"
    folder.mkdir()
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(_CTRL_C_IN_FORK)
    for index in range(3):
        (folder / f"student{index}.py").write_text(REFERENCE.read_text())
    command = [str(BIN / "sdpa-grade"), "batch", str(folder), "--jobs", "1", "--json-dir", str(out)]
    env = {**os.environ, "PYTHONPATH": str(hook)}
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr and "KeyboardInterrupt" not in done.stderr, done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("sdpa-grade batch: interrupted: 0 of 3 results are saved")


def _worker_pids(temporary: Path) -> list[str]:
    """Workers started from this checkout's Python with their folder in ``temporary`` (others on a shared machine, or
    of the tests run beside this one, are not ours to count)."""
    pattern = f"^{BIN}/python[0-9.]* -I -S .*{temporary}/sdpa-worker-"
    return subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout.split()


@pytest.mark.parametrize("seed", [14, 20])
def test_a_cause_shown_by_a_rerun_outranks_one_guessed_from_the_errors_size(tmp_path, seed):
    """misattr_builds_on_wrong_function's masked_softmax divides by (sum + 0.1): on these draws its attention errs by
    up to 8% of the output's size, within bfloat16's rounding, and its feedback once said "precision loss" (a case
    of test_submission_scores_exactly failed about 1 batch in 12). Run again with masked_softmax answered by the
    reference, the attention passes: that evidence is the cause given, not the guess from the error's size."""
    from tests.attacks import overlaid

    path = overlaid(tmp_path, "misattr_builds_on_wrong_function")
    out = tmp_path / "result.json"
    done = run([str(BIN / "sdpa-grade"), "grade", str(path), "--seed", str(seed), "--json", str(out)], timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    test = next(t for t in json.loads(out.read_text())["tests"] if t["name"].endswith(": sdpa_matches_torch"))
    assert test["score"] == test["max_score"]  # carried forward, as before
    assert "it builds on masked_softmax: your scaled_dot_product_attention passes this check once" in test["output"]
    assert "precision loss" not in test["output"]
