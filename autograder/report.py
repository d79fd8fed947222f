"""Results in Gradescope's results.json format, and as a table for the terminal."""

from __future__ import annotations

import time

from autograder import provenance
from autograder.course.deadline import Late, raw_score
from autograder.render.inert import inert
from autograder.render.text import FLAGGED, GRADER_FAILED_NEXT, graded_file_text, late_sentence, output_text, with_late
from autograder.status import Status


def results_json(grading) -> dict:
    """Gradescope's results.json: score is the sum of the tests' scores, always."""
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
            "extra_data": {**_extra_data(item.outcome), "withheld": item.withheld},
        }
        for item in grading.scored
    ]
    extra = _graded_file(getattr(grading, "choice", None))
    if grading.ungradable:
        output = f"Your submission could not be graded: {grading.ungradable}. Score: 0."
    elif grading.grader_error:
        output = f"The grader itself failed on some checks (your code is not to blame). {GRADER_FAILED_NEXT}"
    else:
        output = "Graded by the hidden checks. Each check names what it tested; failed checks say what went wrong."
    if graded_file_text(extra):
        output = f"{output} {graded_file_text(extra)} {FLAGGED}"
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
    """Gradescope's ``status``, only for a check that ran: passed when it earned all it is worth.

    A check that was not run (no GPU) or that the grader itself failed on is no verdict on the
    student: it gets no status, and Gradescope judges it by its score alone. A withheld check (integrity or
    timing of a function that fails its own checks) that passed is shown passed, its points not awarded yet:
    painted red, it read as an accusation of an honest student.
    """
    if item.outcome.status in (Status.NOT_RUN, Status.GRADER_ERROR):
        return {}
    if item.withheld:
        return {"status": Status.PASSED} if item.outcome.status == Status.PASSED else {}
    return {"status": Status.PASSED if item.score == item.max_score else Status.FAILED}


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
        "output": f"The grader failed on this submission (your code is not to blame). {GRADER_FAILED_NEXT}",
        "tests": [],
        "grader_error": detail,
    }
    if record is not None:
        result["extra_data"] = {"provenance": record}
    return result


def table(result: dict, width: int = 100) -> str:
    """One line per check (points and feedback), then the total. Text from the result is made inert (render/inert.py):
    a student's escape sequences are shown, never run by the terminal; its lines stay indented under their check."""
    lines = [f"{'check':<56} {'points':>9}  feedback", "-" * width]
    for test in result["tests"]:
        points = f"{test['score']:g}/{test['max_score']:g}"
        feedback = "ok" if test["output"] == "passed" else inert(test["output"])
        first, *more = feedback.split("\n")
        lines.append(f"{inert(test['name'], keep_newlines=False):<56} {points:>9}  {first}")
        lines += [f"    {line}" for line in more]  # a picture's block grid, under the feedback
    lines.append("-" * width)
    lines.append(f"{'total':<56} {result['score']:g}/{result['max_score']:g}")
    late = (result.get("extra_data") or {}).get("late")
    if isinstance(late, dict) and late_sentence(late, float(result.get("max_score", 0))):
        lines.append(late_sentence(late, float(result.get("max_score", 0))))
    if result.get("ungradable"):
        lines.append(f"not graded: {inert(result['ungradable'])}")
    note = graded_file_text(result.get("extra_data") or {})
    if note:
        lines.append(f"flagged: {inert(note)}")
    return "\n".join(lines)


def stamp(result: dict, late: Late) -> dict:
    """``result`` with the policy applied: its ``score`` the final one, the late fields under extra_data.late
    (the tests keep the points they earned: their sum is the raw score); its ``output`` ends with the late line
    (render/text.py), an earlier policy's line replaced."""
    extra = dict(result.get("extra_data") or {})
    old, extra["late"] = extra.get("late"), late.fields()
    output = with_late(str(result.get("output", "")), old, extra["late"], float(result.get("max_score", 0)))
    return {**result, "score": late.score, "output": output, "extra_data": extra}


def unstamp(result: dict) -> dict:
    """A result stamped by an earlier policy, now that the settings have no deadline: its raw score back."""
    extra = {key: value for key, value in result.get("extra_data", {}).items() if key != "late"}
    late = result.get("extra_data", {}).get("late")
    output = with_late(str(result.get("output", "")), late, None, float(result.get("max_score", 0)))
    return {**result, "score": raw_score(result), "output": output, "extra_data": extra}
