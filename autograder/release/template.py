"""Turn the reference solution into the student's stubs.

Everything between nbgrader's ``### BEGIN SOLUTION`` and ``### END SOLUTION`` markers is
replaced by ``raise NotImplementedError(...)``; the first line of a region may be a
``# HINT: ...`` comment, which becomes the error's message. Everything else is kept as is.
"""

from __future__ import annotations

import re

BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
_HINT = re.compile(r"^\s*# HINT:\s*(?P<hint>.+)$")
_DEF = re.compile(r"^\s*(?:def|class)\s+(?P<name>\w+)")


class MarkerError(ValueError):
    """The reference's solution markers are unbalanced or misplaced."""


def solution_regions(source: str) -> list[tuple[int, int]]:
    """Line index pairs (begin, end) of every solution region, markers included."""
    regions: list[tuple[int, int]] = []
    start: int | None = None
    for number, line in enumerate(source.splitlines()):
        if line.strip() == BEGIN:
            if start is not None:
                raise MarkerError(f"line {number + 1}: {BEGIN} inside another solution region")
            start = number
        elif line.strip() == END:
            if start is None:
                raise MarkerError(f"line {number + 1}: {END} without {BEGIN}")
            regions.append((start, number))
            start = None
    if start is not None:
        raise MarkerError(f"line {start + 1}: {BEGIN} is never closed")
    return regions


def solution_lines(source: str) -> list[str]:
    """The stripped code lines inside solution regions (not markers, hints or blank lines)."""
    lines = source.splitlines()
    found = []
    for begin, end in solution_regions(source):
        for line in lines[begin + 1 : end]:
            text = line.strip()
            if text and not _HINT.match(line):
                found.append(text)
    return found


def stub_source(source: str) -> str:
    """The reference with every solution region replaced by a stub that raises."""
    lines = source.splitlines()
    out: list[str] = []
    owner, cls = "this function", ""
    position = 0
    for begin, end in solution_regions(source):
        for line in lines[position:begin]:
            match = _DEF.match(line)
            if match and not line[0].isspace():
                owner = cls = match.group("name")
            elif match:
                owner = f"{cls}.{match.group('name')}"
            out.append(line)
        indent = lines[begin][: len(lines[begin]) - len(lines[begin].lstrip())]
        hint_match = _HINT.match(lines[begin + 1]) if begin + 1 < end else None
        hint = hint_match.group("hint") if hint_match else "write this part"
        out.append(f"{indent}# TODO: {hint}")
        out.append(f"{indent}raise NotImplementedError({owner + ' is not implemented yet'!r})")
        position = end + 1
    out.extend(lines[position:])
    return "\n".join(out) + "\n"
