"""The results record (report.Result, docs/architecture.md): every reader's view of a results.json, whatever the file
held, and the one rule for whether a check passed."""

from __future__ import annotations

import json

import pytest

from autograder.course.class_results import class_results
from autograder.course.similarity import answers
from autograder.render.html import check_rows
from autograder.report import Result, load
from autograder.status import Status, passed

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


def test_one_rule_decides_passed_for_the_page_the_class_and_the_similarity():
    """passed: earned all it is worth. A check carried forward (points kept, outcome failed) passed on the page, in
    the class's counts and in the answers compared; a withheld one did not; a check worth 0 counts nowhere."""
    carried = {**TEST, "name": "f: carried", "output": "differs. Correct once g is fixed",
               "extra_data": {**TEST["extra_data"], "check": "carried", "outcome": "failed"}}  # fmt: skip
    withheld = {**TEST, "name": "f: withheld", "score": 0, "extra_data": {**TEST["extra_data"], "withheld": True}}
    unscored = {**TEST, "name": "f: unscored", "score": 0, "max_score": 0}
    result = {"tests": [TEST, carried, withheld, unscored]}
    verdicts = [passed(test) for test in Result.of(result).tests]
    assert verdicts == [True, True, False, True]  # 0 of 0 earned all it is worth: its readers leave it out
    assert [row["state"] for row in check_rows(result)] == ["passed", "passed", "withheld", "unscored"]
    stats = class_results({"ann": result})
    assert dict(stats.passed) == {TEST["name"]: 1, "f: carried": 1, "f: withheld": 0}
    assert {name: verdict for name, (_, _, verdict) in answers(result).items()} == {
        TEST["name"]: True, "f: carried": True, "f: withheld": False}  # fmt: skip
