"""The words, the CSV and the dashboard section of ``sdpa-grade batch ... --similarity``, from the fields of the
``Similarity`` (and each ``Pair``) that course/similarity.py hands in. Similar submissions are listed for the
instructor's review: evidence for a conversation, never a deduction."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from autograder.atomic import write_atomically
from autograder.render.inert import csv_cell, inert
from autograder.render.text import describe

CSV_COLUMNS = ["student_a", "student_b", "code", "behaviour", "flagged", "why"]
MAX_SHOWN_LINES = 400  # a file longer than this is shown cut, in the side-by-side (it was compared whole)


def summary_line(found) -> str:
    """The pass in one line, naming every file it could not compare, with why (a copy it cannot read is one the
    review cannot see: the instructor hears of it here, not only in the CSV's rows)."""
    line = f"similarity: {len(found.pairs)} pairs, {len(found.flagged)} flagged for review (not a deduction)"
    unseen = [not_compared(name, reason) for name, reason in found.not_compared.items()]
    return inert("; ".join([line, *unseen]), keep_newlines=False)


def not_compared(name: str, reason: str) -> str:
    return f"{name}'s code {reason}"


def _agreement(agreement) -> str:
    what = "passed" if agreement.passed else describe(agreement.mistake) if agreement.mistake else "the same failure"
    return f"{agreement.check} ({what}; {agreement.shared_by} of the class answered so)"


def why(pair, found) -> str:
    """What raised (or did not raise) the pair, in one line: each kind of evidence against the class's typical pair."""
    code = f"code {pair.code:.0%} shared (class median {found.code_median:.0%}, z {pair.code_z:.1f})"
    wrong = [g for g in pair.agreements if not g.passed]
    behaviour = (f"behaviour {pair.behaviour:.1f} (class median {found.behaviour_median:.1f},"
                 f" z {pair.behaviour_z:.1f}): {len(wrong)} wrong answer(s) alike")  # fmt: skip
    if wrong:
        behaviour += ", " + "; ".join(_agreement(g) for g in wrong[:3])
    skipped = "".join(f"; {not_compared(name, reason)}" for name, reason in pair.skipped)
    verdict = "far above the class on both" if pair.flagged else "not far above the class on both"
    return inert(f"{verdict}: {code}; {behaviour}{skipped}", keep_newlines=False)


def write_csv(path: Path, found) -> None:
    """One row per pair, in the roster's order, written whole (atomic.write_atomically)."""
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(CSV_COLUMNS)
    for pair in found.pairs:
        writer.writerow([csv_cell(pair.a), csv_cell(pair.b), f"{pair.code:.3f}", f"{pair.behaviour:.2f}",
                         "yes" if pair.flagged else "no", csv_cell(why(pair, found))])  # fmt: skip
    write_atomically(path, text.getvalue())


def _side(text: str, regions: tuple[tuple[int, int], ...], kept: frozenset[int]) -> list[dict]:
    """A file's lines for the side-by-side, each with its number and whether it is highlighted: a line of a matching
    region that holds code the comparison kept (``kept``, similarity.code_lines: not a docstring, a comment or a blank
    line, which the comparison sets aside, though a region spans them)."""
    marked = {line for first, last in regions for line in range(first, last + 1)} & kept
    lines = text.splitlines()
    shown = [{"number": i, "text": inert(line.expandtabs(4), keep_newlines=False), "match": i in marked}
             for i, line in enumerate(lines[:MAX_SHOWN_LINES], 1)]  # fmt: skip
    if len(lines) > MAX_SHOWN_LINES:
        shown.append({"number": "", "text": f"... {len(lines) - MAX_SHOWN_LINES} more lines", "match": False})
    return shown


def section(found) -> dict | None:
    """The dashboard's "Similar submissions (for review)" section: each flagged pair, its evidence and both files."""
    if found is None:
        return None
    pairs = []
    for pair in found.flagged:
        pairs.append({
            "a": pair.a, "b": pair.b, "why": why(pair, found), "code": pair.code, "behaviour": pair.behaviour,
            "wrong": [_agreement(g) for g in pair.agreements if not g.passed],
            "left": _side(found.sources.get(pair.a, ""), pair.a_lines, found.kept.get(pair.a, frozenset())),
            "right": _side(found.sources.get(pair.b, ""), pair.b_lines, found.kept.get(pair.b, frozenset())),
            "skipped": [not_compared(name, reason) for name, reason in pair.skipped],
        })  # fmt: skip
    return {"pairs": pairs, "count": len(found.pairs), "summary": summary_line(found),
            "code_median": found.code_median, "behaviour_median": found.behaviour_median}  # fmt: skip
