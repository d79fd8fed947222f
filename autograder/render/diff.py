"""The words and the CSV of ``sdpa-grade --diff``: a summary line, then one line per student that changed, from the
fields of the ``Diff`` (and each ``StudentChange``) that course/diff.py hands in."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from autograder.atomic import write_atomically
from autograder.render.inert import csv_cell, inert, shown
from autograder.render.text import describe, reason
from autograder.status import MISSING

CSV_COLUMNS = ["student", "check", "old_points", "new_points", "old_score", "new_score", "what"]


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def headline(d) -> str:
    """'7 of 40 change: 5 up, 2 down, mean +0.8': of every student on either side (one on one side only is a change);
    the mean over every student on both sides, changed or not."""
    return f"{len(d.changes)} of {d.students} change: {d.up} up, {d.down} down, mean {d.mean_shift:+.1f}"


def _what(change) -> list[str]:
    """What changed for one student besides the checks' points, in words."""
    parts = []
    if change.old_status != change.new_status:
        if change.old_status == MISSING:
            parts.append("only in the new results")
        elif change.new_status == MISSING:
            parts.append("only in the old results")
        else:
            parts.append(f"{change.old_status} -> {change.new_status}")
    if change.old_max != change.new_max and MISSING not in (change.old_status, change.new_status):
        parts.append(f"out of {_number(change.old_max)} -> {_number(change.new_max)}")
    if change.old_late != change.new_late:
        parts.append(f"late penalty {_number(change.old_late)} -> {_number(change.new_late)}")
    if change.old_record != change.new_record:
        parts.append(f"instructor's decisions: {change.old_record or 'none'} -> {change.new_record or 'none'}")
    parts += [f"mistake appeared: {describe(m)}" for m in change.appeared]
    parts += [f"mistake gone: {describe(m)}" for m in change.vanished]
    parts += [f"now flagged: {reason(f)}" for f in change.flagged]
    parts += [f"no longer flagged: {reason(f)}" for f in change.unflagged]
    return parts


def line(change) -> str:
    """One student's line: old -> new total, the checks that moved, and what else changed."""
    total = f"{_number(change.old_score)} -> {_number(change.new_score)}"
    if change.shift is not None:
        total += f" ({change.shift:+g})"
    checks = ", ".join(f"{c.check} {_number(c.old)} -> {_number(c.new)}" for c in change.checks)
    rest = "; ".join(filter(None, [checks, *_what(change)]))
    return inert(f"{shown(change.student)}: {total}" + (f"; {rest}" if rest else ""), keep_newlines=False)


def run_field(key: str) -> str:
    """A provenance field in words ('settings sha256'), a setting by its own key ('setting points.scale_values')."""
    return f"setting {key}" if "." in key else key.replace("_", " ")


def lines(d) -> list[str]:
    """The whole diff as text: what it compared, the summary, what changed between the runs, each change."""
    out = [f"Grades from {d.old} to {d.new}: {headline(d)}"]
    for key, before, after in d.runs:
        out.append(
            f"  {run_field(key)} differs: {', '.join(before) or 'not recorded'} -> {', '.join(after) or 'not recorded'}"
        )
    out += [f"  {line(change)}" for change in d.changes]
    return out


def write_csv(path: Path, d) -> None:
    """One row per student and check that moved, and one per other change (``check`` empty), written whole."""
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(CSV_COLUMNS)
    for change in d.changes:
        scores = [_number(change.old_score), _number(change.new_score)]
        for check in change.checks:
            writer.writerow(
                [csv_cell(shown(change.student)), check.check, _number(check.old), _number(check.new), *scores, ""]
            )
        for what in _what(change) or ([] if change.checks else ["total"]):
            writer.writerow([csv_cell(shown(change.student)), "", "", "", *scores, csv_cell(what)])
    write_atomically(path, text.getvalue())
