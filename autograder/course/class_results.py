"""A class's results in one place: each student's status, flags and named mistakes, and the class's statistics.

The text summary (summary.py) and the CSV (grades_csv.py), the dashboard and the feedback pages
(render/dashboard.py) all read one ``ClassResults``, built once from the results' structured fields (scores,
``tests[].extra_data``, ``execution_time``, ``ungradable``, ``grader_error``: the record, record.Result), never from
their wording.
Nothing is counted twice, so the summary and the dashboard cannot drift apart, and each student's file names
come from roster.py.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from autograder.course.roster import page_names, result_names
from autograder.record import Result
from autograder.render.html import feedback_text
from autograder.render.inert import shown
from autograder.render.text import graded_file_text
from autograder.status import FILE_CHOICE, GRADED, GRADER_ERROR, MISSING, NO_TIME, UNGRADABLE, Verdict, verdict


def status_of(result: dict | None) -> str:
    """graded, ungradable, grader-error, or missing (no result yet: a merge of shards that is not whole)."""
    if result is None:
        return MISSING
    record = Result.of(result)
    return GRADER_ERROR if record.grader_error else UNGRADABLE if record.ungradable else GRADED


@dataclass(frozen=True)
class Flag:
    """Something an instructor should look at: a failed integrity check, an ungradable submission, a grader error."""

    student: str
    kind: str  # the integrity check's flag (extra_data.flag), "ungradable", "grader error" or FILE_CHOICE
    detail: str  # the check's name and feedback, the reason it was ungradable, the error's last line, the candidates
    check: str | None = None  # for an integrity flag: the check that raised it (extra_data.check); else None


@dataclass(frozen=True)
class Student:
    """One student's line of the class: their numbers, and their result as written (``None``: missing)."""

    name: str
    result: dict | None
    file: str  # the result file's name (roster.result_names)
    page: str  # the feedback page's name (roster.page_names)
    score: float
    max_score: float
    seconds: float
    status: str  # graded, ungradable, grader-error or missing
    mistakes: list[str] = field(default_factory=list)  # named mistakes shown by any of their checks, sorted
    flags: list[Flag] = field(default_factory=list)  # grader error, ungradable, file choice, integrity flags
    held: str = ""  # why the grade of record is held out of every export (course/decisions.py), "" when it is not

    @property
    def shown(self) -> str:
        """The name as printed and written to the CSV (render/inert.shown)."""
        return shown(self.name)


@dataclass(frozen=True)
class ClassResults:
    """Every student, in the roster's order, and what the class's checks counted over those with a result."""

    students: list[Student]
    passed: Counter  # check name -> submissions that passed it (status.verdict)
    seen: Counter  # check name -> submissions it was scored on (worth more than 0), in order of first appearance
    mistakes: Counter  # mistake key -> submissions that showed it (in any check), in order of first appearance
    checks: list[str]  # every check's name, in the results' order, scored or not
    check_seconds: dict[str, list[float]]  # check name -> its seconds, one per submission that ran it
    carried: Counter = field(default_factory=Counter)  # check name -> submissions where it kept its points (carried)
    withheld: Counter = field(default_factory=Counter)  # check name -> submissions where it was withheld (gated)

    @property
    def present(self) -> list[Student]:
        """The students with a result (those missing from a merge left out)."""
        return [s for s in self.students if s.result is not None]

    @property
    def flags(self) -> list[Flag]:
        return [flag for student in self.students for flag in student.flags]


def flags_of(name: str, result: dict) -> list[Flag]:
    """A result's flags, from its fields: a grader error, ungradable, the file's choice (``extra_data.candidates``,
    ``search_stopped``), and each test's ``extra_data.flag``."""
    record = Result.of(result)
    found = []
    if record.grader_error:
        last = (record.grader_error.strip().splitlines() or [""])[-1]
        found.append(Flag(name, "grader error", last[:300]))
    if record.ungradable:
        found.append(Flag(name, "ungradable", record.ungradable))
    if record.late and record.late.get("missing_time"):
        why = str(record.late.get("time_problem") or "") or "this submission has no time"
        found.append(Flag(name, NO_TIME, f"a deadline is set and {why}: no late penalty applied"))
    choice = graded_file_text(record.extra_data)
    if choice:
        found.append(Flag(name, FILE_CHOICE, choice))
    found += [
        Flag(name, test.flag, f"{test.name}: {feedback_text(test)}", test.check) for test in record.tests if test.flag
    ]
    return found


def class_results(results: dict[str, dict | None]) -> ClassResults:
    """Student name -> their result (``None``: none yet) -> the class, each number counted here and only here."""
    passed_here: Counter = Counter()
    carried: Counter = Counter()
    withheld: Counter = Counter()
    seen: Counter = Counter()
    mistakes: Counter = Counter()
    check_seconds: dict[str, list[float]] = {}
    files, pages = result_names(list(results)), page_names(list(results))
    students = []
    for name, result in results.items():
        record = Result.of(result)
        shown_here: dict[str, None] = {}  # a set in order of appearance: ties in mistakes keep the results' order
        for test in record.tests:
            check_seconds.setdefault(test.name, []).append(float(test.seconds))
            if test.mistake:
                shown_here[test.mistake] = None
            if not test.scored:
                continue
            seen[test.name] += 1
            found = verdict(test)
            passed_here[test.name] += found == Verdict.PASSED
            if found in (Verdict.CARRIED, Verdict.WITHHELD):
                (carried if found == Verdict.CARRIED else withheld)[test.name] += 1
        mistakes.update(list(shown_here))
        students.append(Student(
            name, result, files[name], pages[name], float(record.score), float(record.max_score),
            float(record.execution_time), status_of(result), sorted(shown_here),
            flags_of(name, result) if result is not None else [], record.held,
        ))  # fmt: skip
    return ClassResults(
        students, passed_here, seen, mistakes, list(check_seconds), check_seconds, carried=carried, withheld=withheld
    )
