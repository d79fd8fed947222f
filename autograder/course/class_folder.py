"""A class as the class verbs (batch, summary, push, and the decisions) open it: the folder listed through the gate,
the shard's students, each one's result file, the instructor's decisions, and the files a verb is asked to write
(``Exports``), checked before anything is graded, written or sent. A verb's refusal is ``Refused``: one line, which the
verb prints after its own name (exit 2)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from autograder.config import Settings
from autograder.course import decisions
from autograder.course.resume import mark_output
from autograder.course.roster import result_names
from autograder.course.shard import select
from autograder.read.handed_in import listing
from autograder.render.images import MissingMatplotlib, require
from autograder.render.inert import shown


class Refused(Exception):
    """What a class verb cannot do, before it does anything: one line, after the verb's name; exit 2."""


@dataclass(frozen=True)
class Exports:
    """The files and pages a batch or a summary writes once the grades are known, typed (cli.py builds it; checked by
    ``check_exports``)."""

    csv: Path | None = None
    csv_format: str = "plain"  # plain, canvas or moodle
    roster: Path | None = None  # the LMS's own gradebook export, for canvas and moodle
    assignment: str = "sdpa"  # the assignment's name in the LMS
    report: Path | None = None  # the class dashboard, with a folder of feedback pages beside it
    diff: Path | None = None  # an earlier results folder: print (and report) what changed since
    similarity: bool = False  # also compare every pair of students: similarity.csv, for review (never a deduction)


@dataclass(frozen=True)
class Class:
    """One class, opened: its students (the shard's), where each one's result is, and the decisions kept."""

    folder: Path
    out: Path  # the results folder
    everyone: dict  # student -> submission, the whole class
    roster: dict  # student -> submission, the shard's (the whole class without --shard)
    skipped: dict  # what the gate's listing left out, and why
    targets: dict[str, Path]  # student -> their result file
    known: list[decisions.Decision]  # the instructor's decisions (decisions.jsonl)


def results_folder(folder: Path, json_dir: Path | None) -> Path:
    return json_dir or folder.parent / f"{folder.name}-grades"


def open_class(folder: Path, json_dir: Path | None, settings: Settings, shard: tuple[int, int] | None = None,
               show: str | None = None) -> Class:  # fmt: skip
    """The class in ``folder``, listed once through the gate (``listing``), with its results in ``json_dir`` (default
    DIR-grades beside DIR); Refused for a folder that is none, a student to ``show`` who is not in the shard (before
    anything is written), or a decisions file that cannot be read."""
    if not folder.is_dir():
        raise Refused(f"{folder} is not a folder")
    entries = listing(folder, settings.limits)
    roster = select(entries.students, shard)
    if show is not None and show not in roster:
        have = ", ".join(shown(name) for name in roster)
        raise Refused(f"Invalid --show {shown(show)}: no such student in {folder} (have: {have})")
    out = results_folder(folder, json_dir)
    mark_output(out)
    files = result_names(list(roster))
    for name in roster:
        if files[name] != f"{name}.json":
            print(f"note: the result of '{shown(name)}' is in {files[name]}", file=sys.stderr)
    try:
        known = decisions.read(out)
    except decisions.DecisionsError as error:
        raise Refused(str(error)) from None
    targets = {name: out / files[name] for name in roster}
    return Class(folder, out, entries.students, roster, entries.skipped, targets, known)


def check_exports(exports: Exports, out: Path) -> None:
    """Refused, before any grading, for exports that cannot be made: a gradebook format without its --csv and
    --roster (or a roster without one), a dashboard without matplotlib to draw it, a roster that is not the LMS's
    export, an OLD folder for --diff that cannot be compared or is this run's own."""
    if exports.csv_format != "plain" and (exports.csv is None or exports.roster is None):
        raise Refused(f"--csv-format {exports.csv_format} needs --csv FILE and --roster FILE (the LMS's own gradebook"
                      " export)")  # fmt: skip
    if exports.roster is not None and exports.csv_format == "plain":
        raise Refused("--roster goes with --csv-format canvas or moodle")
    if exports.report is not None:
        try:
            require()
        except MissingMatplotlib as error:
            raise Refused(f"--report draws with matplotlib, which is not installed: {error}") from None
    if exports.csv_format != "plain" and exports.roster is not None:
        from autograder.course.gradebook import RosterError, check_roster

        try:
            check_roster(exports.roster, exports.csv_format)
        except RosterError as error:
            raise Refused(str(error)) from None
    if exports.diff is not None:
        from autograder.course.diff import Unusable, read_folder

        try:
            read_folder(exports.diff)
        except Unusable as error:
            raise Refused(f"--diff: {error}") from None
        if exports.diff.resolve() == out.resolve():
            raise Refused(f"--diff {exports.diff} is this run's own results folder: regrade into a new --json-dir"
                          " and compare the released one with it")  # fmt: skip
