"""Results in Gradescope's results.json format, and as a table for the terminal."""

from __future__ import annotations

import time

from autograder.render.inert import inert
from autograder.render.text import with_picture


def results_json(grading) -> dict:
    """Gradescope's results.json: score is the sum of the tests' scores, always."""
    tests = [
        {
            "name": f"{item.outcome.function}: {item.outcome.check}",
            "score": item.score,
            "max_score": item.max_score,
            "output": with_picture(item.feedback, item.outcome.picture),
            "visibility": "visible",
            "tags": [item.outcome.function, item.outcome.category],
            "status": "passed" if item.score == item.max_score and item.max_score > 0 else "failed",
            # structured fields for summaries and dashboards: never parsed back from the wording above
            "extra_data": _extra_data(item.outcome),
        }
        for item in grading.scored
    ]
    if grading.ungradable:
        output = f"Your submission could not be graded: {grading.ungradable}. Score: 0."
    elif grading.grader_error:
        output = "The grader itself failed on some checks; your instructor must look at this submission."
    else:
        output = "Graded by the hidden checks. Each check names what it tested; failed checks say what went wrong."
    result = {
        "score": round(sum(test["score"] for test in tests), 6),
        "max_score": round(sum(test["max_score"] for test in tests), 6),
        "execution_time": round(time.perf_counter() - grading.started, 2),
        "output": output,
        "tests": tests,
    }
    if grading.ungradable:
        result["ungradable"] = grading.ungradable
    if getattr(grading, "sandbox", ""):  # the instructor sees a weaker sandbox in every result
        result["extra_data"] = {"sandbox": grading.sandbox}
    if grading.grader_error:
        result["grader_error"] = grading.grader_error
    return result


def _extra_data(outcome) -> dict:
    """What summaries and dashboards read: the check, its outcome, the named mistake, its time, a flag, a picture."""
    data = {"check": outcome.check, "outcome": outcome.status, "mistake": outcome.mistake, "seconds": round(outcome.seconds, 3),
            "flag": outcome.flag, "evidence": outcome.evidence}
    if outcome.picture:
        data["picture"] = outcome.picture
    return data


def grader_failure(detail: str) -> dict:
    """The results file when the grader itself failed before it could grade: 0, and a reason for the instructor."""
    return {
        "score": 0,
        "max_score": 0,
        "execution_time": 0,
        "output": "The grader failed on this submission; your instructor has been told.",
        "tests": [],
        "grader_error": detail,
    }


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
    if result.get("ungradable"):
        lines.append(f"not graded: {inert(result['ungradable'])}")
    return "\n".join(lines)
