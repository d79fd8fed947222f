"""The results record: what results.json holds, as its readers read it (``Result``, ``CheckResult``:
docs/architecture.md, "The results record"). Declared once, here, below every reader (the pages, the terminal, the
class's results) and the writers (report.py), as plain fields: nothing here words anything."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from autograder import provenance


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
    def held(self) -> str:
        """Why the grade of record is held out of every export (course/decisions.py), "" when it is not."""
        record = self.extra_data.get("record")
        return _text(record.get("held")) if isinstance(record, dict) else ""

    @property
    def raw_score(self) -> float:
        """The score before any late penalty or the instructor's override (a result stamped earlier keeps its raw
        score under extra_data.late; one settled by the instructor's decisions, under extra_data.record)."""
        raw = (self.late or {}).get("raw_score")
        record = self.extra_data.get("record")
        computed = record.get("computed_score") if isinstance(record, dict) else None
        for given in (raw, computed):
            if isinstance(given, (int, float)) and not isinstance(given, bool):
                return float(given)
        return float(self.score)


def problem(result: object) -> str:
    """What makes ``result`` (a file's JSON) no results record, "" when it is one: an object whose ``tests``, where
    present, is a list of objects."""
    if not isinstance(result, dict):
        return f"not a results record (a JSON {type(result).__name__}, not an object)"
    tests = result.get("tests", [])
    if not isinstance(tests, list) or not all(isinstance(test, dict) for test in tests):
        return "not a results record (its tests are not a list of objects)"
    return ""
