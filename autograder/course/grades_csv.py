"""The class's grades as files: ``--csv`` in the plain form (one row per student, with how a late penalty was reached
and what graded it) or an LMS's gradebook (gradebook.py), and the lines that say where they went, as a verb's
``Exports`` ask (class_folder.py)."""

from __future__ import annotations

import csv
import io
import sys
from pathlib import Path

from autograder.atomic import write_atomically
from autograder.course.class_folder import Exports
from autograder.course.class_results import ClassResults
from autograder.record import Result
from autograder.render.inert import csv_cell, inert, shown
from autograder.status import HELD, MISSING


def write_grades(exports: Exports, stats: ClassResults) -> list[tuple[bool, str]]:
    """--csv in its format; for an LMS, the lines to print last (after the summary, where they are seen), each with
    whether it is a problem (said after the verb's name, ``tell``): the file and its column, and the students left
    unmatched on either side (then the verb exits 1)."""
    if not exports.csv:
        return []
    if exports.csv_format == "plain":
        write_csv(exports.csv, stats)
        return []
    from autograder.course.gradebook import RosterError, unmatched_line, write_canvas, write_moodle

    scores = {name: float(score) for name, (score, _) in final_scores(stats).items()}
    held = [s.name for s in stats.present if s.held]
    top = max((s.max_score for s in stats.present), default=0.0)
    try:
        if exports.csv_format == "canvas":
            written = write_canvas(exports.csv, exports.roster, exports.assignment, scores, top, held)
        else:
            written = write_moodle(exports.csv, exports.roster, exports.assignment, scores, held)
    except RosterError as error:
        return [(True, f"{error}; no --csv written")]
    grades = f"{written.matched} student's grade" if written.matched == 1 else f"{written.matched} students' grades"
    if written.column_is_new:
        others = ", ".join(f"'{inert(name, keep_newlines=False)}'" for name in written.assignments) or "none"
        where = (
            f"in a new column '{inert(written.column, keep_newlines=False)}' (the roster has no column for"
            f" --assignment {inert(exports.assignment, keep_newlines=False)}; its assignments: {others})"
        )
    else:
        where = f"in the roster's column '{inert(written.column, keep_newlines=False)}'"
    lines = [(False, f"note: {exports.csv} holds {grades}, {where}")]
    if held:
        lines.append((False, held_line(held, exports.csv)))
    for side, names in (("in the roster but not graded", written.roster_only),
                        ("graded but not in the roster", written.graded_only)):  # fmt: skip
        if names:
            lines.append((True, unmatched_line(side, names, exports.csv)))
    return lines


def final_scores(stats: ClassResults) -> dict[str, tuple[float, float]]:
    """Each student with a grade of record not held -> (final score, its maximum), as the record holds it (the late
    decision and the instructor's, course/decisions.py): every file of grades (the CSV, Canvas's and Moodle's) and
    ``sdpa-grade push`` take it here, and decide nothing."""
    return {s.name: (Result.of(s.result).score, Result.of(s.result).max_score) for s in stats.present if not s.held}


def held_line(held: list[str], where: object) -> str:
    """The note that names the students held out of an export, and how to release them."""
    names = ", ".join(shown(name) for name in held)
    return f"note: {len(held)} held for review, not in {where} (sdpa-grade clear DIR STUDENT releases one): {names}"


def tell(lines: list[tuple[bool, str]], verb: str) -> bool:
    """Print write_grades' lines (stderr), a problem after the verb's name; True when there was one (the students not
    all matched, or no file written)."""
    for problem, line in lines:
        print(f"{verb}: {line}" if problem else line, file=sys.stderr)
    return any(problem for problem, _ in lines)


LATE_COLUMNS = ("raw_score", "late_penalty", "submitted_at", "hours_late", "extension")


# The CSV's columns after the grade: how a late penalty was reached ([deadline]; empty where none applies), and
# what graded it (provenance.py), so a grade can be traced to its file
PROVENANCE_COLUMNS = ("graded_file", "sha256", "checks_sha256", "settings_sha256", "graded_at")


def write_csv(path: Path, stats: ClassResults) -> None:
    """The grades, one row per student (no result yet: a row that says missing), written whole or not at all.

    ``score`` is the grade of record (after a late penalty and the instructor's decisions); a held student's row says
    held, with no score."""
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(["student", "score", "max_score", "status", *LATE_COLUMNS, *PROVENANCE_COLUMNS])
    finals = final_scores(stats)
    for student in stats.students:
        if student.result is None:
            writer.writerow(
                [csv_cell(student.shown), "", "", MISSING, *("" for _ in (*LATE_COLUMNS, *PROVENANCE_COLUMNS))]
            )
            continue
        result = Result.of(student.result)
        late, record = result.late or {}, result.provenance
        writer.writerow(
            [
                csv_cell(student.shown),
                *(finals[student.name] if student.name in finals else ("", "")),
                HELD if student.held else student.status,
                *(csv_cell(str(late.get(column, ""))) for column in LATE_COLUMNS),
                *(csv_cell(str(record.get(column) or "")) for column in PROVENANCE_COLUMNS),
            ]
        )
    write_atomically(path, text.getvalue())
