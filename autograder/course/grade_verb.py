"""``sdpa-grade grade SUBMISSION``: one submission graded by the pipeline (grade.py), its late decision made there, its
results written (``--json``: Gradescope's results.json, whole or not at all; ``--html``: the feedback page) and
printed. Its options are a typed ``GradeOptions``, built once from the command line (cli.py)."""

from __future__ import annotations

import json
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

from autograder.assignment.deadline import DeadlineError, parse_given_time
from autograder.atomic import write_atomically
from autograder.config import Settings
from autograder.course.roster import student_of
from autograder.interrupts import Interrupts
from autograder.provenance import failed
from autograder.record import Result
from autograder.render.images import MissingMatplotlib, require
from autograder.render.inert import inert
from autograder.render.terminal import table
from autograder.report import grader_failure

VERB = "sdpa-grade grade"
GIVEN = "Invalid --submitted-at"  # the start of the message for a time that cannot be read


@dataclass(frozen=True)
class GradeOptions:
    """What ``sdpa-grade grade`` was asked to do, typed; built once from the command line (cli.py)."""

    submission: Path  # an attention.py, a notebook, or a student's folder
    json: Path | None = None  # Gradescope's results.json, written here
    html: Path | None = None  # the feedback page, written here
    submitted_at: str | None = None  # when it was handed in, as given (ISO 8601, or nbgrader's timestamp.txt form)
    metadata: Path | None = None  # Gradescope's submission_metadata.json
    device: str = "cpu"  # where the timing check runs
    seed: int | None = None  # the inputs' seed (tests and benches); None: a fresh one
    zygote: object = None  # the worker zygote this process forked at its start (cli.main), or None: the grading's own


def run_grade(options: GradeOptions, settings: Settings) -> int:
    """Grade the submission, write its results and print them: 0 graded, 2 nothing to grade (a results file is written
    all the same, score 0) or a bad option, 3 the grader's own failure, 130 interrupted (saying what is written)."""
    written = False
    try:
        if options.html:
            try:
                require()
            except MissingMatplotlib as error:
                print(f"{VERB}: --html draws with matplotlib, which is not installed: {error}", file=sys.stderr)
                return 2
        try:
            given = None if options.submitted_at is None else parse_given_time(options.submitted_at, GIVEN)
        except DeadlineError as error:
            print(f"{VERB}: {error}", file=sys.stderr)
            return 2
        with Interrupts() as interrupts:
            try:
                result, error = _grade_one(options, given, settings)
            except KeyboardInterrupt:
                interrupts.seen = True
            if interrupts.seen:  # whatever the grading made of it (pytest stops, the worker dies): nothing is written
                return interrupted(options.json, written)
            if options.json:  # first: whatever printing meets, the results file is there, whole or as it was
                options.json.parent.mkdir(parents=True, exist_ok=True)
                write_atomically(options.json, json.dumps(result, indent=2))
                written = True
        return _tell(options, result, error)
    except KeyboardInterrupt:  # before the grading or after it: nothing more is written
        return interrupted(options.json, written)


def _grade_one(options: GradeOptions, given, settings: Settings) -> tuple[dict, str]:
    """The submission graded: its result, and the grader's error ("" when it graded)."""
    try:
        from autograder.grade import grade  # here: a broken install is the grader's failure too
        from autograder.read.handed_in import TimeFrom

        time = TimeFrom(options.submission.stem, given, metadata=options.metadata)
        grading = grade(options.submission, settings, device=options.device, seed=options.seed,
                        zygote=options.zygote, time=time)  # fmt: skip
        return grading.result, grading.grader_error
    except Exception:  # noqa: BLE001 - the grader's own fault: loud, and still a valid results file
        result = grader_failure(traceback.format_exc(), failed(settings, options.device))
        return result, result["grader_error"]


def _tell(options: GradeOptions, result: dict, error: str) -> int:
    """What the grading found, printed (and drawn with --html); the exit code."""
    record = Result.of(result)
    if record.late and record.late.get("missing_time"):
        print(f"{VERB}: no late penalty applied: {record.late.get('time_problem')}", file=sys.stderr)
    if not record.ungradable:  # nothing was graded: the one line below says why, not a table of zeros
        print(table(result))
    if record.sandbox:
        print(f"{VERB}: {record.sandbox}", file=sys.stderr)
    if options.html:
        from autograder.render.html import write_student_page  # jinja2 and the pictures: only for a page asked for

        write_student_page(options.html, student_of(options.submission), result)
    if error:
        print(f"{VERB}: the grader failed:\n{inert(error)}", file=sys.stderr)
        return 3
    if record.ungradable:  # missing or unreadable: a results file (score 0) is written all the same, for Gradescope
        print(f"{VERB}: nothing to grade: {inert(record.ungradable, keep_newlines=False)}", file=sys.stderr)
        return 2
    return 0


def interrupted(results: Path | None, written: bool) -> int:
    """Ctrl-C: say what is written (the results file whole, or nothing, the file as it was); 130."""
    if written:
        print(f"{VERB}: interrupted: {results} is written, whole; nothing else is", file=sys.stderr)
    else:
        kept = f" ({results} is as it was)" if results else ""
        print(f"{VERB}: interrupted: nothing written{kept}", file=sys.stderr)
    return 130
