"""The results record (record.Result, docs/architecture.md): every reader's view of a results.json, whatever the file
held, and the one rule for whether a check passed."""

from __future__ import annotations

import json

import pytest

from autograder.course.class_results import class_results
from autograder.course.similarity import answers
from autograder.record import Result
from autograder.render.html import check_rows
from autograder.report import load
from autograder.status import Category, Status, Verdict, passed, verdict

TEST = {
    "name": "masked_softmax: softmax_values",
    "score": 2,
    "max_score": 2,
    "output": "passed",
    "visibility": "visible",
    "tags": ["masked_softmax", "values"],
    "status": "passed",
    "extra_data": {"check": "softmax_values", "outcome": "passed", "mistake": "", "seconds": 0.5, "flag": ""},
}


def test_a_record_reads_every_field_as_its_type():
    """Fields as written, the test's extra_data flattened into its record."""
    result = {"score": 2, "max_score": 2, "execution_time": 1.5, "output": "ok", "tests": [TEST],
              "extra_data": {"graded_file": "attention.py", "student": "ann", "late": {"raw_score": 2}}}  # fmt: skip
    record = Result.of(result)
    assert (record.score, record.max_score, record.graded_file, record.student) == (2, 2, "attention.py", "ann")
    assert record.late == {"raw_score": 2} and record.provenance == {} and record.raw_score == 2
    (test,) = record.tests
    assert (test.check, test.outcome, test.seconds, test.tags, test.withheld) == (
        "softmax_values", Status.PASSED, 0.5, ("masked_softmax", "values"), False)  # fmt: skip


@pytest.mark.parametrize(
    "written",
    [None, {}, {"tests": None}, {"tests": "x", "score": "10"}, {"score": True, "extra_data": [1], "tests": [3, {}]},
     {"tests": [{"name": 5, "extra_data": "x", "score": None}], "extra_data": {"late": "no", "candidates": "ab"}}],
)  # fmt: skip
def test_a_partial_or_odd_result_reads_as_empty_values(written):
    """An old, partial or odd result never raises: a field missing or of another type is its empty value."""
    record = Result.of(written)
    assert (record.score, record.max_score, record.ungradable, record.late, record.candidates) == (0, 0, "", None, ())
    assert all(test.name == "" and test.score == 0 and test.picture is None for test in record.tests)
    class_results({"ann": written if isinstance(written, dict) else None})  # the class's counts read it too
    check_rows(written or {})


@pytest.mark.parametrize(
    ("text", "why"),
    [("{not json", "no readable result"), ("[1, 2]", "not a results record (a JSON list"),
     ('{"tests": {"a": 1}}', "its tests are not a list of objects"), ('{"tests": [1]}', "its tests are not a list")],
)  # fmt: skip
def test_a_file_that_is_no_record_loads_as_the_graders_failure(tmp_path, text, why):
    """load: a file that cannot be read, or is no results record, is the grader's failure on it, with the problem."""
    path = tmp_path / "ann.json"
    path.write_text(text, encoding="utf-8")
    loaded = load(path)
    assert why in loaded["grader_error"] and loaded["tests"] == [] and loaded["score"] == 0
    assert load(tmp_path / "missing.json")["grader_error"].startswith("no readable result in")
    path.write_text(json.dumps({"tests": [TEST]}), encoding="utf-8")
    assert load(path) == {"tests": [TEST]}  # a record loads as it was written


def test_one_rule_decides_the_verdict_for_the_page_the_class_and_the_similarity():
    """verdict: a check carried forward (points kept, outcome failed, ``extra_data.carried``) is "carried" on the page
    and in the class's counts, not passed; a withheld one is "withheld", not failed; a check worth 0 counts nowhere. The
    similarity compares a carried check as an answer that earned its points (the cause is elsewhere)."""
    kept = {**TEST["extra_data"], "check": "carried", "outcome": "failed", "carried": ["g"]}
    carried = {**TEST, "name": "f: carried", "output": "Correct once g is fixed.", "extra_data": kept}
    withheld = {**TEST, "name": "f: withheld", "score": 0, "extra_data": {**TEST["extra_data"], "withheld": True}}
    unscored = {**TEST, "name": "f: unscored", "score": 0, "max_score": 0}
    result = {"tests": [TEST, carried, withheld, unscored]}
    records = Result.of(result).tests
    assert [verdict(test) for test in records] == [Verdict.PASSED, Verdict.CARRIED, Verdict.WITHHELD, Verdict.PASSED]
    assert [passed(test) for test in records] == [True, False, False, True]  # 0 of 0: its readers leave it out
    assert records[1].carried == ("g",)
    assert [row["state"] for row in check_rows(result)] == ["passed", "carried", "withheld", "unscored"]
    stats = class_results({"ann": result})
    assert dict(stats.passed) == {TEST["name"]: 1, "f: carried": 0, "f: withheld": 0}
    assert (dict(stats.carried), dict(stats.withheld)) == ({"f: carried": 1}, {"f: withheld": 1})
    assert {name: verdict for name, (_, _, verdict) in answers(result).items()} == {
        TEST["name"]: True, "f: carried": True, "f: withheld": False}  # fmt: skip


def scored_one_mistake(tmp_path) -> dict:
    """results.json of a grading with the attention wrong (its own check fails, its integrity check withheld) and the
    module's check failing only through it (carried forward)."""
    from autograder.config import load_settings
    from autograder.grade import Grading
    from autograder.plugin import Outcome
    from autograder.report import results_json
    from autograder.scoring import score

    outcomes = [
        Outcome("sdpa_matches_torch", "scaled_dot_product_attention", Category.MATCHES_TORCH, Status.FAILED,
                message="the output: values differ.", mistake="divide_by_dk", cause="you divided by d_k"),
        Outcome("integrity_sdpa", "scaled_dot_product_attention", Category.INTEGRITY, Status.PASSED),
        Outcome("mha_matches_torch", "MultiHeadAttention", Category.MULTI_HEAD, Status.FAILED,
                message="MultiHeadAttention's output: values differ.", builds_on=("scaled_dot_product_attention",)),
        Outcome("integrity_mha", "MultiHeadAttention", Category.INTEGRITY, Status.PASSED),
    ]  # fmt: skip
    settings = load_settings(environ={})
    grading = Grading(tmp_path / "attention.py", settings)
    grading.scored = score(outcomes, settings)
    return results_json(grading)


def test_a_check_carried_forward_reads_kept_its_points_on_every_path(tmp_path):
    """One check that kept its points by error carried forward is neither passed nor failed anywhere: results.json
    says "carried" (extra_data.verdict, the functions in extra_data.carried, no Gradescope "passed") and its output
    leads with why it kept its points; the terminal, the class summary, the page, the dashboard's counts and
    nbgrader's cell word it "kept its points". A withheld gate is "withheld" on each, never failed."""
    from autograder.render.terminal import summary, table

    result = scored_one_mistake(tmp_path)
    tests = {test["extra_data"]["check"]: test for test in result["tests"]}
    carried, withheld = tests["mha_matches_torch"], tests["integrity_sdpa"]
    assert carried["score"] == carried["max_score"] > 0 and carried.get("status") != Status.PASSED
    assert carried["extra_data"]["verdict"] == "carried"
    assert carried["extra_data"]["carried"] == ["scaled_dot_product_attention"]
    assert carried["output"].startswith("Correct once scaled_dot_product_attention is fixed: this check keeps its")
    assert withheld["extra_data"]["verdict"] == "withheld" and withheld.get("status") != "failed"
    assert withheld["output"].startswith("Not awarded yet: this check's points are withheld"), withheld["output"]
    assert tests["sdpa_matches_torch"]["extra_data"]["verdict"] == "failed"
    assert json.loads(json.dumps(carried))["extra_data"]["verdict"] == "carried"

    lines = table(result).splitlines()
    [row] = [line for line in lines if "mha_matches_torch" in line]
    assert "4/4" in row and "Correct once scaled_dot_product_attention" in row.split("4/4", 1)[1][:60], row
    [row] = [line for line in lines if "integrity_sdpa" in line]
    assert "0/2" in row and "withheld" in row and "fail" not in row, row
    stats = class_results({"ann": result})
    said = {line.split()[1]: line for line in summary(stats).splitlines() if ": " in line and "/" in line}
    assert said["mha_matches_torch"].endswith("0/1 (1 kept its points)"), said
    assert said["integrity_sdpa"].endswith("0/1 (1 withheld)") and said["sdpa_matches_torch"].endswith("0/1"), said
    states = {row["name"].split(": ")[1]: row["state"] for row in check_rows(result)}
    assert states == {"sdpa_matches_torch": "failed", "integrity_sdpa": "withheld", "mha_matches_torch": "carried",
                      "integrity_mha": "passed"}  # fmt: skip
    pytest.importorskip("matplotlib", reason="the dashboard draws with matplotlib (the [report] extra)")
    from autograder.render.dashboard import _checks

    counted = {row["name"].split(": ")[1]: row for row in _checks(stats)[0]}
    assert (counted["mha_matches_torch"]["passed"], counted["mha_matches_torch"]["carried"]) == (0, 1)
    assert counted["integrity_sdpa"]["withheld"] == 1


def test_nbgraders_cell_says_kept_its_points_or_withheld_and_why(tmp_path):
    """nbgrader's cells: a check carried forward is a note headed "kept its points" (full points, no error); a withheld
    check's note is headed "withheld" and its score (nbgrader's partial credit 0) says withheld and why, never a bare
    0."""
    from autograder.config import load_settings
    from autograder.nbgrader_path.cell_feedback import verdict_outputs
    from autograder.plugin import Outcome
    from autograder.scoring import score

    outcomes = [
        Outcome("sdpa_matches_torch", "scaled_dot_product_attention", Category.MATCHES_TORCH, Status.FAILED,
                message="the output: values differ."),
        Outcome("integrity_sdpa", "scaled_dot_product_attention", Category.INTEGRITY, Status.PASSED),
        Outcome("mha_matches_torch", "MultiHeadAttention", Category.MULTI_HEAD, Status.FAILED,
                message="MultiHeadAttention's output: values differ.", builds_on=("scaled_dot_product_attention",)),
    ]  # fmt: skip
    scored = {item.outcome.check: item for item in score(outcomes, load_settings(environ={}))}
    [note] = verdict_outputs("mha_matches_torch", scored["mha_matches_torch"])
    assert note.output_type == "stream" and note.text.startswith("mha_matches_torch: kept its points\n"), note
    assert "Correct once scaled_dot_product_attention is fixed" in note.text
    note, points = verdict_outputs("integrity_sdpa", scored["integrity_sdpa"])
    assert note.text.startswith("integrity_sdpa: withheld (not awarded yet)\n") and "Not awarded yet:" in note.text
    assert points.output_type == "execute_result" and points.data["text/plain"] == "0"  # nbgrader's partial credit
    shown = points.data["text/html"]
    assert "withheld" in shown and "once scaled_dot_product_attention passes its own correctness" in shown, shown
