"""Results in Gradescope's results.json format (worded at the edge: render/text.py; the terminal's table:
render/terminal.py).

The writers build results.json's dict here (``results_json``, ``grader_failure``, ``stamp``); every reader reads it
through ``record.Result.of`` (a file from disk through ``load``), and a check's verdict (passed, kept its points,
withheld, failed) is decided by ``status.verdict`` alone.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from autograder import provenance
from autograder.assignment.deadline import Late
from autograder.record import Result, problem
from autograder.render.text import GRADER_FAILED, graded_file_text, output_text, result_output, with_late
from autograder.status import Status, Verdict, verdict


def load(path: Path) -> dict:
    """A results.json from disk, as it was written; one that cannot be read, or is no results record (old, partial,
    another file), is the grader's failure on it (``grader_failure``), with the problem: loading never raises."""
    try:
        result = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):  # nested past the parser: no result either
        return grader_failure(f"no readable result in {path}")
    wrong = problem(result)
    return grader_failure(f"{path}: {wrong}") if wrong else result


def results_json(grading) -> dict:
    """Gradescope's results.json: score is the sum of the tests' scores, always, and max_score the sum of their
    maxima: the checks' and the knowledge check's questions (one maximum for every submission of the assignment).
    The one writer of both: the late decision (``stamp``) and the instructor's (course/decisions.py) move only the
    final score, never the maximum."""
    tests = [
        {
            "name": f"{item.outcome.function}: {item.outcome.check}",
            "score": item.score,
            "max_score": item.max_score,
            "output": output_text(item),
            "visibility": _visibility(item, grading.settings.gradescope.visibility),
            "tags": [item.outcome.function, item.outcome.category],
            **_status(item),
            # structured fields for summaries and dashboards: never parsed back from the wording above
            "extra_data": {
                **_extra_data(item.outcome),
                "withheld": item.withheld,
                "carried": list(item.carried),
                "verdict": verdict(item),
            },  # fmt: skip
        }
        for item in grading.scored
    ]
    tests += getattr(grading, "questions", [])  # the knowledge check's (grade.knowledge_check), counted below as any
    extra = _graded_file(getattr(grading, "choice", None))
    output = result_output(grading.ungradable, bool(grading.grader_error), graded_file_text(extra))
    result = {
        "score": round(sum(test["score"] for test in tests), 6),
        "max_score": round(sum(test["max_score"] for test in tests), 6),
        "execution_time": round(time.perf_counter() - grading.started, 2),
        "output": output,
        "tests": tests,
    }
    if grading.ungradable:
        result["ungradable"] = grading.ungradable
    extra["provenance"] = provenance.record(grading)  # what was graded, with what, when
    if getattr(grading, "sandbox", ""):  # the instructor sees a weaker sandbox in every result
        extra["sandbox"] = grading.sandbox
    result["extra_data"] = extra
    if grading.grader_error:
        result["grader_error"] = grading.grader_error
    return result


def _graded_file(choice) -> dict:
    """The rule's choice as fields (submission.choose): the graded file, relative to the submission; every candidate,
    the graded first, where there were others; the bound that stopped the search, where one did. Either flags the
    student (class_results.flags_of)."""
    if choice is None:
        return {}
    extra: dict = {"graded_file": choice.relative}
    if choice.others:
        extra["candidates"] = list(choice.candidates)
    if choice.stopped:
        extra["search_stopped"] = {"limit": choice.stopped[0], "value": choice.stopped[1]}
    return extra


def _status(item) -> dict:
    """Gradescope's ``status`` (its two words, passed or failed), only for a check that ran: the verdict where
    Gradescope has a word for it (``status.verdict``).

    A check that was not run (no GPU) or that the grader itself failed on is no verdict on the
    student: it gets no status, and Gradescope judges it by its score alone. A check that kept its points by error
    carried forward is neither: no status (its score is full), its output says why it kept them. A withheld check
    (integrity or timing of a function that fails its own checks) that passed is shown passed, its points not
    awarded yet: painted red, it read as an accusation of an honest student.
    """
    if item.outcome.status in (Status.NOT_RUN, Status.GRADER_ERROR):
        return {}
    found = verdict(item)
    if found == Verdict.WITHHELD:
        return {"status": Status.PASSED} if item.outcome.status == Status.PASSED else {}
    return {} if found == Verdict.CARRIED else {"status": Status(found.value)}


def _visibility(item, chosen: str) -> str:
    """Gradescope's ``visibility``: a check that was not run and counts nothing (0 of 0) is hidden from the student;
    the others as the settings choose ([gradescope] visibility)."""
    return "hidden" if item.outcome.status == Status.NOT_RUN and item.max_score == 0 else chosen


def _extra_data(outcome) -> dict:
    """What summaries and dashboards read: the check, its outcome, the named mistake, its time, a flag, a picture."""
    data = {
        "check": outcome.check,
        "outcome": outcome.status,
        "mistake": outcome.mistake,
        "seconds": round(outcome.seconds, 3),
        "flag": outcome.flag,
        "evidence": outcome.evidence,
    }
    if outcome.picture:
        data["picture"] = outcome.picture
    return data


def grader_failure(detail: str, record: dict | None = None) -> dict:
    """The results file when the grader itself failed before it could grade: 0, and a reason for the instructor
    (and, where known, the provenance of the grading that failed: ``provenance.failed``)."""
    result = {
        "score": 0,
        "max_score": 0,
        "execution_time": 0,
        "output": GRADER_FAILED,
        "tests": [],
        "grader_error": detail,
    }
    if record is not None:
        result["extra_data"] = {"provenance": record}
    return result


def stamp(result: dict, late: Late) -> dict:
    """``result`` with the policy applied: its ``score`` the final one, the late fields under extra_data.late
    (the tests keep the points they earned: their sum is the raw score); its ``output`` ends with the late line
    (render/text.py), an earlier policy's line replaced."""
    record = Result.of(result)
    extra = {**record.extra_data, "late": late.fields()}
    output = with_late(record.output, record.late, extra["late"], float(record.max_score))
    return {**result, "score": late.score, "output": output, "extra_data": extra}
