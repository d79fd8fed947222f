"""``sdpa-grade --diff OLD NEW``: what a change of checks or settings did to every grade, before anyone sees it.

OLD and NEW are two results folders as ``--json-dir`` writes them (one results.json per student, named by
roster.py): the released grades, and a regrade into a folder of its own. A student is the same student on
both sides when their result file has the same name. Everything is read from the results' fields
(scores, ``tests[].extra_data``, ``ungradable``, ``grader_error``: the record, record.Result), through
class_results.py, the one place a result's status, flags and named mistakes are decided; the words are written
by render/diff.py.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

from autograder.course.class_results import flags_of, status_of
from autograder.record import Result
from autograder.render.diff import lines, write_csv
from autograder.render.text import decided
from autograder.report import load
from autograder.status import MISSING

# provenance fields that describe a run as a whole (the same for every student of one run): the diff says
# which of them differ between the two folders, i.e. what changed between the runs
RUN_FIELDS = ("grader_version", "checks_sha256", "settings_sha256")


class Unusable(Exception):
    """A folder that cannot be compared: missing, not a folder, or holding no results."""


@dataclass(frozen=True)
class CheckChange:
    """One check whose points moved (``None``: the check is not in that side's results)."""

    check: str
    old: float | None
    new: float | None


@dataclass(frozen=True)
class StudentChange:
    """Everything that differs for one student between the two folders."""

    student: str  # the student's name as the batch recorded it (extra_data.student), else the file's name less .json
    old_score: float | None  # None: no result on that side
    new_score: float | None
    old_max: float | None
    new_max: float | None
    old_status: str  # class_results' status words, MISSING where the side has no result
    new_status: str
    checks: list[CheckChange] = field(default_factory=list)
    appeared: list[str] = field(default_factory=list)  # named mistakes shown now and not before
    vanished: list[str] = field(default_factory=list)
    flagged: list[str] = field(default_factory=list)  # flag kinds raised now and not before
    unflagged: list[str] = field(default_factory=list)
    old_late: float = 0.0  # the late penalty taken off on each side ([deadline]; 0 for none)
    new_late: float = 0.0
    old_record: str = ""  # the instructor's decisions in force on each side (held, override, extension), in words
    new_record: str = ""

    @property
    def shift(self) -> float | None:
        """The change of the total, where the student has a result on both sides."""
        if self.old_score is None or self.new_score is None:
            return None
        return self.new_score - self.old_score


@dataclass(frozen=True)
class Diff:
    """The comparison of two results folders."""

    old: Path
    new: Path
    compared: int  # students with a result on both sides
    students: int  # students with a result on either side
    shifts: list[float]  # each compared student's total shift, changed or not
    changes: list[StudentChange]  # students with anything different, in name order (one side only included)
    runs: list[tuple[str, list[str], list[str]]]  # provenance field, old side's values, new side's, where they differ

    @property
    def up(self) -> int:
        return sum(1 for c in self.changes if (c.shift or 0) > 0)

    @property
    def down(self) -> int:
        return sum(1 for c in self.changes if (c.shift or 0) < 0)

    @property
    def mean_shift(self) -> float:
        return sum(self.shifts) / len(self.shifts) if self.shifts else 0.0


def read_folder(folder: Path) -> dict[str, dict]:
    """Result file stem -> its result (report.load: one unreadable is the grader's failure on it), for every results
    file in ``folder``; Unusable when there is none."""
    if not folder.is_dir():
        raise Unusable(f"{folder} is not a folder")
    results = {path.stem: load(path) for path in sorted(folder.glob("*.json")) if not path.name.startswith(".")}
    if not results:  # (a name starting with a dot: a batch's temporary file)
        raise Unusable(f"{folder} holds no results files (*.json, as --json-dir writes them)")
    return results


def _points(result: dict) -> dict[str, float]:
    return {test.check: float(test.score) for test in Result.of(result).tests}


def _mistakes(result: dict) -> set[str]:
    return {test.mistake for test in Result.of(result).tests} - {""}


def _late_penalty(result: dict | None) -> float:
    late = Result.of(result).late or {}
    penalty = late.get("late_penalty")
    return float(penalty) if isinstance(penalty, (int, float)) and not isinstance(penalty, bool) else 0.0


def name_of(stem: str, *results: dict | None) -> str:
    """The student's name a batch recorded in their result (``extra_data.student``), else the file's stem: a name
    that needed a hash for its file (``=1+1`` in ``_1_1-<hash>.json``) is shown as the student's."""
    for result in results:
        name = Result.of(result).student
        if name and len(name) <= 1000:
            return name
    return stem


def _flags(name: str, result: dict) -> set[str]:
    return {flag.kind for flag in flags_of(name, result)}


def _compare(name: str, old: dict | None, new: dict | None) -> StudentChange | None:
    empty: dict = {"tests": []}
    before, after = _points(old or empty), _points(new or empty)
    checks = [
        CheckChange(check, before.get(check), after.get(check))
        for check in [*before, *(c for c in after if c not in before)]
        if before.get(check) != after.get(check) and old is not None and new is not None
    ]
    mistakes_old, mistakes_new = _mistakes(old or empty), _mistakes(new or empty)
    flags_old, flags_new = _flags(name, old or empty), _flags(name, new or empty)

    def total(result: dict | None, key: str) -> float | None:
        return None if result is None else float(getattr(Result.of(result), key))

    change = StudentChange(
        name_of(name, new, old),
        total(old, "score"), total(new, "score"), total(old, "max_score"), total(new, "max_score"),
        status_of(old) if old is not None else MISSING, status_of(new) if new is not None else MISSING,
        checks, sorted(mistakes_new - mistakes_old), sorted(mistakes_old - mistakes_new),
        sorted(flags_new - flags_old), sorted(flags_old - flags_new), _late_penalty(old), _late_penalty(new),
        decided(old), decided(new),
    )  # fmt: skip
    moved = (
        change.checks
        or change.appeared
        or change.vanished
        or change.flagged
        or change.unflagged
        or change.old_status != change.new_status
        or change.old_score != change.new_score
        or change.old_max != change.new_max
        or change.old_late != change.new_late
        or change.old_record != change.new_record
    )
    return change if moved else None


def _runs(old: dict[str, dict], new: dict[str, dict]) -> list[tuple[str, list[str], list[str]]]:
    """The provenance fields of a whole run that differ between the two folders, with each side's values."""

    def values(results: dict[str, dict], key: str) -> list[str]:
        found = set()
        for result in results.values():
            provenance = Result.of(result).provenance
            if provenance.get(key) is not None:
                found.add(str(provenance[key]))
        return sorted(found)

    differ = []
    for key in RUN_FIELDS:
        before, after = values(old, key), values(new, key)
        if before != after:
            differ.append((key, before, after))
    return differ + _settings_moved(old, new)


def _settings_moved(old: dict[str, dict], new: dict[str, dict]) -> list[tuple[str, list[str], list[str]]]:
    """Each setting whose value differs between the runs (``section.key``, old value, new value), where each
    side was graded with one set of settings (provenance's ``settings`` record)."""

    def only(results: dict[str, dict]) -> dict | None:
        found = {
            json.dumps(record, sort_keys=True)
            for result in results.values()
            if isinstance(record := Result.of(result).provenance.get("settings"), dict)
        }
        return json.loads(found.pop()) if len(found) == 1 else None

    before, after = only(old), only(new)
    if before is None or after is None:
        return []
    moved = []
    for section in sorted(set(before) | set(after)):
        a, b = before.get(section) or {}, after.get(section) or {}
        if not (isinstance(a, dict) and isinstance(b, dict)):
            continue
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                moved.append((f"{section}.{key}", [json.dumps(a.get(key))], [json.dumps(b.get(key))]))
    return moved


def diff(old_folder: Path, new_folder: Path) -> Diff:
    """Compare two results folders (Unusable when either cannot be read)."""
    old, new = read_folder(old_folder), read_folder(new_folder)
    names = sorted(set(old) | set(new))
    changes = [c for name in names if (c := _compare(name, old.get(name), new.get(name))) is not None]
    changes.sort(key=lambda change: change.student)
    shifts = [float(Result.of(new[n]).score) - float(Result.of(old[n]).score) for n in names if n in old and n in new]
    return Diff(old_folder, new_folder, len(shifts), len(names), shifts, changes, _runs(old, new))


@dataclass(frozen=True)
class DiffOptions:
    """What ``sdpa-grade diff`` was asked to do, typed; built once from the command line (cli.py)."""

    old: Path  # the earlier results folder
    new: Path  # the later one
    csv: Path | None = None  # also one row per student and check that moved


def run_diff(options: DiffOptions) -> int:
    """``sdpa-grade diff OLD NEW``: print what changed (and write the CSV); 2 when a folder cannot be compared. It
    reads results only: no settings."""
    try:
        found = diff(options.old, options.new)
    except Unusable as error:
        print(f"sdpa-grade diff: {error}", file=sys.stderr)
        return 2
    print("\n".join(lines(found)))
    if options.csv is not None:
        write_csv(options.csv, found)
    return 0
