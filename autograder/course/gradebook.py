"""Gradebook files an LMS imports, made from the LMS's own roster export: Canvas and Moodle.

Students are matched to their graded folders by an identifier the roster holds, in a fixed order
(Canvas: SIS Login ID, then Login ID, then e-mail; Moodle: ID number, then username, then e-mail), the
whole value compared, never a name guessed from another; students left unmatched on either side are
listed, and the command that writes the file exits 1 (the file holds the matched rows only). Cells are
written with Python's csv module, quoted where needed, and every one through render/inert.py's csv_cell: the
identity cells are the roster's own, and a name (which a student may choose) or any ID starting with ``=``, ``+``,
``-``, ``@``, tab or CR would run as a formula in the spreadsheet an instructor opens the file in, so it is
written as text behind a leading quote. Matching reads the roster's own values. The import matches on IDs that
need no quote: Canvas on ID first (digits), Moodle on the column the instructor maps (ID number, username or
e-mail); only such an ID that itself starts with one of those characters does not match, and the LMS says so.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path

from autograder.atomic import write_atomically
from autograder.course.identity import key as identity_key
from autograder.course.identity import twins_line
from autograder.render.inert import csv_cell, shown

# Canvas's gradebook export: these identity columns come first, Section the last of them; then one column per
# assignment, "Title (id)"; the second row is "Points Possible" (its first cell indented by spaces in exports)
CANVAS_IDENTITY = ("Student", "ID", "SIS User ID", "SIS Login ID", "Integration ID", "Section")
CANVAS_MATCH = ("SIS Login ID", "Login ID", "Email")
POINTS_POSSIBLE = "Points Possible"
# Moodle's grade export / import: identity columns, one grade column per item
MOODLE_IDENTITY = ("First name", "Last name", "ID number", "Username", "Email address")
MOODLE_MATCH = ("ID number", "Username", "Email address")
MAX_ROSTER_BYTES = 20 * 1024 * 1024


class RosterError(ValueError):
    """A roster that cannot be used: not found, not CSV, or without the columns it needs."""


@dataclass(frozen=True)
class Written:
    """What writing a gradebook did: students matched, and those left unmatched on each side."""

    matched: int
    roster_only: list[str]  # roster rows (their Student / name column) with no graded folder
    graded_only: list[str]  # graded students no roster row names
    column: str = ""  # the column the grades are in
    column_is_new: bool = False  # True: the roster had no column for the assignment, this one is new
    assignments: tuple[str, ...] = ()  # the roster's own assignment columns, for a note when column_is_new
    held: tuple[str, ...] = ()  # students held out of the file (their rows left out: the LMS keeps what it has)


def _read_roster(path: Path) -> tuple[list[str], list[list[str]]]:
    try:
        if path.stat().st_size > MAX_ROSTER_BYTES:
            raise RosterError(f"roster {path} is larger than {MAX_ROSTER_BYTES // 2**20} MiB")
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        raise RosterError(f"roster {path} cannot be read: {error}") from None
    rows = list(csv.reader(io.StringIO(text)))
    if not rows or not rows[0]:
        raise RosterError(f"roster {path} is empty")
    return [cell.strip() for cell in rows[0]], rows[1:]


def _match(row: dict[str, str], keys: tuple[str, ...], graded: Mapping[str, object]) -> str | None:
    for key in keys:
        value = (row.get(key) or "").strip()
        if value and value in graded:
            return value
        folded = {identity_key(name): name for name in graded}
        if value and key.lower().startswith("email") and identity_key(value) in folded:
            return folded[identity_key(value)]  # e-mail addresses compare as every identity does (course/identity)
    return None


def _write(path: Path, rows: list[list[str]]) -> None:
    text = io.StringIO()
    csv.writer(text, quoting=csv.QUOTE_MINIMAL).writerows([csv_cell(cell) for cell in row] for row in rows)
    write_atomically(path, text.getvalue())


# an assignment's column as each LMS names it: Canvas "Title (1234)", Moodle "Assignment: Title (Real)"
_ASSIGNMENT = re.compile(r"^(?:[^:()]+: )?(?P<title>.+?) \([^()]*\)$")


def _column(header: list[str], title: str) -> tuple[str, bool]:
    """The roster's column for the assignment, compared without case: ``title`` itself, Canvas's ``title (id)`` or
    Moodle's ``Type: title (display)``; else a new column ``title`` (True)."""
    wanted = title.strip().casefold()
    for name in header:
        found = _ASSIGNMENT.match(name)
        if name.casefold() == wanted or (found and found["title"].casefold() == wanted):
            return name, False
    return title, True


def _assignments(header: list[str]) -> tuple[str, ...]:
    return tuple(name for name in header if _ASSIGNMENT.match(name))


def check_roster(roster: Path, csv_format: str) -> tuple[list[str], list[list[str]]]:
    """The roster's header and rows, where it is the LMS's export ``csv_format`` needs; RosterError naming it if not.
    The batch calls it before it grades anyone: a roster it cannot use is a bad option, not a failure at the end."""
    header, rows = _read_roster(roster)
    if csv_format == "canvas" and ("Student" not in header or not any(key in header for key in CANVAS_MATCH)):
        raise RosterError(
            f"roster {roster} is not a Canvas gradebook export: it needs a Student column and one of"
            f" {', '.join(CANVAS_MATCH)} (has: {', '.join(header)})"
        )
    if csv_format == "moodle" and not any(key in header for key in MOODLE_MATCH):
        raise RosterError(
            f"roster {roster} is not a Moodle grade export: it needs one of {', '.join(MOODLE_MATCH)}"
            f" (has: {', '.join(header)})"
        )
    return header, rows


def write_canvas(path: Path, roster: Path, title: str, scores: Mapping[str, float], points: float,
                 held: Collection[str] = ()) -> Written:  # fmt: skip
    """Canvas's gradebook import: the roster's identity columns, the assignment's column and Points Possible."""
    header, rows = check_roster(roster, "canvas")
    identity = [name for name in CANVAS_IDENTITY if name in header]
    if identity[-1] != "Section" and "Section" in identity:
        identity.remove("Section")
        identity.append("Section")
    column, new = _column(header, title)
    out = [[*identity, column], [" " * 4 + POINTS_POSSIBLE, *[""] * (len(identity) - 1), f"{points:g}"]]
    written = _fill(path, out, header, rows, identity, CANVAS_MATCH, scores, held, skip=_canvas_skip)
    return Written(written.matched, written.roster_only, written.graded_only, column, new, _assignments(header),
                   written.held)  # fmt: skip


def _canvas_skip(row: dict[str, str]) -> bool:
    """Canvas's own non-student rows: Points Possible, and 'Manual Posting' / muted lines some exports add."""
    first = (row.get("Student") or "").strip()
    return first in (POINTS_POSSIBLE, "Student, Test") or first.startswith(("Manual Posting", "Muted"))


def write_moodle(path: Path, roster: Path, title: str, scores: Mapping[str, float],
                 held: Collection[str] = ()) -> Written:  # fmt: skip
    """Moodle's grade import (Grades > Import > CSV file): identity columns and one grade column."""
    header, rows = check_roster(roster, "moodle")
    identity = [name for name in MOODLE_IDENTITY if name in header]
    column, new = _column(header, title)
    written = _fill(path, [[*identity, column]], header, rows, identity, MOODLE_MATCH, scores, held,
                    skip=lambda row: False)  # fmt: skip
    return Written(written.matched, written.roster_only, written.graded_only, column, new, _assignments(header),
                   written.held)  # fmt: skip


def _fill(path, out, header, rows, identity, keys, scores, held, *, skip) -> Written:
    """The rows of the roster matched to the students' scores; a held student's row is left out (the LMS keeps what it
    has), neither written nor counted unmatched."""
    everyone = {**scores, **{name: None for name in held}}
    if clash := twins_line(everyone):  # one roster row would take two students' grades
        raise RosterError(clash)
    used, roster_only = set(), []
    for cells in rows:
        row = dict(zip(header, cells))
        if not any(cell.strip() for cell in cells) or skip(row):
            continue
        student = _match(row, keys, everyone)
        if student is None or student in used:
            roster_only.append(row.get("Student") or row.get("Email address") or row.get(keys[0], "") or "?")
            continue
        used.add(student)
        if student in scores:
            out.append([row.get(name, "") for name in identity] + [f"{scores[student]:g}"])
    _write(path, out)
    return Written(len(used & set(scores)), roster_only, sorted(set(everyone) - used), held=tuple(held))


def unmatched_line(side: str, names: list[str], path: object) -> str:
    """The line that names the students left unmatched on one ``side``: each name shown (render/inert.shown) in double
    quotes, a quote inside escaped, so that a name holding a comma (Canvas's "Doe, Jane") reads as one student."""
    listed = ", ".join(json.dumps(shown(name), ensure_ascii=False) for name in names)
    return f"{len(names)} {side} (not in {path}): {listed}"
