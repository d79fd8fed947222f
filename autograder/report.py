"""Results in Gradescope's results.json format (worded at the edge: render/text.py; the terminal's table:
render/terminal.py).

The record is declared here once (``Result``, ``CheckResult``: docs/architecture.md, "The results record"): the
writers build results.json's dict, every reader reads it through ``Result.of`` (a file from disk through ``load``),
and a check's verdict (passed, kept its points, withheld, failed) is decided by ``status.verdict`` alone.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from autograder import provenance
from autograder.assignment.deadline import Late
from autograder.render.text import GRADER_FAILED, graded_file_text, output_text, result_output, with_late
from autograder.status import Status, Verdict, verdict

# --- the record: what results.json holds, as its readers read it ------------------------------------------------


def _number(value: object) -> float:
    """A number as written (an int stays an int: the CSV writes it as it was), anything else 0."""
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _table(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def _texts(value: object) -> tuple[str, ...]:
    return tuple(str(item) for item in value) if isinstance(value, list) else ()


@dataclass(frozen=True)
class CheckResult:
    """One of results.json's ``tests``: Gradescope's fields, then ours from its ``extra_data``."""

    name: str
    score: float
    max_score: float
    output: str  # the feedback, worded (render/text.py)
    visibility: str  # Gradescope's: "hidden" for a check not run that counts nothing, else [gradescope] visibility
    tags: tuple[str, ...]  # the check's function and its category (a Category)
    status: str  # Gradescope's: Status.PASSED, Status.FAILED, or "" for a check that gave no verdict
    check: str  # extra_data.check (the test's name, in a result written before it was recorded)
    outcome: str  # extra_data.outcome: a Status, before points ("" where none was recorded)
    mistake: str  # extra_data.mistake: the named mistake (checks/mistakes.py), "" for none
    seconds: float
    flag: str  # extra_data.flag: an integrity flag (checks/flags.py), "" for none
    evidence: dict | None  # extra_data.evidence: where a failed result first differs
    withheld: bool  # extra_data.withheld: gated, not awarded until its function passes its own checks
    picture: dict | None  # extra_data.picture: the tiny example's weights (checks/pictures.py)
    carried: tuple[str, ...] = ()  # extra_data.carried: kept its points, correct once these functions are fixed

    @classmethod
    def of(cls, test: object) -> CheckResult:
        given = _table(test)
        extra = _table(given.get("extra_data"))
        name = _text(given.get("name"))
        return cls(
            name, _number(given.get("score")), _number(given.get("max_score")), _text(given.get("output")),
            _text(given.get("visibility")), _texts(given.get("tags")),
            _text(given.get("status")), _text(extra.get("check")) or name, _text(extra.get("outcome")),
            _text(extra.get("mistake")), _number(extra.get("seconds")), _text(extra.get("flag")),
            _table(extra.get("evidence")) or None, extra.get("withheld") is True, _table(extra.get("picture")) or None,
            _texts(extra.get("carried")),
        )  # fmt: skip

    @property
    def scored(self) -> bool:
        """Worth something: a check of 0 points (not run and excluded, or set to 0) is no verdict either way."""
        return bool(self.max_score)


@dataclass(frozen=True)
class Result:
    """results.json as its readers read it: Gradescope's fields, then ours (``ungradable``, ``grader_error`` and
    ``extra_data``'s), each of its type whatever the file held (a field missing or of another type: its empty
    value). The writers (``results_json``, ``stamp``) build and stamp the dict itself."""

    score: float
    max_score: float
    execution_time: float
    output: str
    tests: tuple[CheckResult, ...]
    ungradable: str  # why nothing was graded (submission.Ungradable), "" when it was
    grader_error: str  # the grader's own failure, for the instructor's log, "" for none
    extra_data: dict  # the submission's fields below, as written (render/text.graded_file_text reads them)
    graded_file: str  # the file graded, relative to the submission (submission.choose)
    candidates: tuple[str, ...]  # every file that could be the submission, the graded first, where there were others
    search_stopped: dict | None  # the bound that stopped the search for the file: {limit, value}
    provenance: dict  # what was graded, with what, when (provenance.record); {} where none was recorded
    sandbox: str  # a weaker sandbox than the full one, in words; "" for the full one
    late: dict | None  # the [deadline] policy's fields (deadline.Late.fields), where one was applied
    student: str  # the student's name, as a batch recorded it

    @classmethod
    def of(cls, result: Mapping | None) -> Result:
        """The record of ``result`` (a dict as written or read; None: an empty one). Never raises."""
        given = dict(result) if isinstance(result, Mapping) else {}
        extra = _table(given.get("extra_data"))
        tests = given.get("tests")
        return cls(
            _number(given.get("score")), _number(given.get("max_score")),
            _number(given.get("execution_time")), _text(given.get("output")),
            tuple(CheckResult.of(test) for test in tests if isinstance(test, dict)) if isinstance(tests, list) else (),
            _text(given.get("ungradable")), _text(given.get("grader_error")), extra, _text(extra.get("graded_file")),
            _texts(extra.get("candidates")),
            extra.get("search_stopped") if isinstance(extra.get("search_stopped"), dict) else None,
            provenance.of(given), _text(extra.get("sandbox")),
            extra.get("late") if isinstance(extra.get("late"), dict) else None, _text(extra.get("student")),
        )  # fmt: skip

    @property
    def raw_score(self) -> float:
        """The score before any late penalty (a result stamped earlier keeps its raw score under extra_data.late)."""
        raw = (self.late or {}).get("raw_score")
        return float(raw) if isinstance(raw, (int, float)) else float(self.score)


def problem(result: object) -> str:
    """What makes ``result`` (a file's JSON) no results record, "" when it is one: an object whose ``tests``, where
    present, is a list of objects."""
    if not isinstance(result, dict):
        return f"not a results record (a JSON {type(result).__name__}, not an object)"
    tests = result.get("tests", [])
    if not isinstance(tests, list) or not all(isinstance(test, dict) for test in tests):
        return "not a results record (its tests are not a list of objects)"
    return ""


def load(path: Path) -> dict:
    """A results.json from disk, as it was written; one that cannot be read, or is no results record (old, partial,
    another file), is the grader's failure on it (``grader_failure``), with the problem: loading never raises."""
    try:
        result = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return grader_failure(f"no readable result in {path}")
    wrong = problem(result)
    return grader_failure(f"{path}: {wrong}") if wrong else result


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
            "extra_data": {
                **_extra_data(item.outcome),
                "withheld": item.withheld,
                "carried": list(item.carried),
                "verdict": verdict(item),
            },  # fmt: skip
        }
        for item in grading.scored
    ]
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


def unstamp(result: dict) -> dict:
    """A result stamped by an earlier policy, now that the settings have no deadline: its raw score back."""
    record = Result.of(result)
    extra = {key: value for key, value in record.extra_data.items() if key != "late"}
    output = with_late(record.output, record.late, None, float(record.max_score))
    return {**result, "score": record.raw_score, "output": output, "extra_data": extra}
