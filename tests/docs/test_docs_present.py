"""Docs and the grader's comments state the present: the history goes to CHANGELOG.md.

Two history markers a regular expression finds without false positives: an issue number ("issue 37") and a
"wave" of attacks. They are looked for in README.md, docs/*.md and the comments and docstrings of autograder/;
CHANGELOG.md is where they belong.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

from tests.helpers import ROOT

# No nested or overlapping quantifiers: linear in the text's length
HISTORY = re.compile(r"\bissues? #?\d+|\bwaves?\b", re.IGNORECASE)

DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
MODULES = sorted((ROOT / "autograder").rglob("*.py"))


def where(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name


def prose_lines(path: Path) -> list[tuple[int, str]]:
    """(line number, text) for each line of a module's comments and docstrings, code left out."""
    source = path.read_text()
    lines = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            lines.append((token.start[0], token.string))
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                for offset, text in enumerate(ast.get_source_segment(source, first).splitlines()):
                    lines.append((first.lineno + offset, text))
    return sorted(lines)


def history(lines: list[tuple[int, str]], path: Path) -> list[str]:
    # A marker split over two lines ("issue\n37") is found too: each line is read with the start of the next
    found = []
    for index, (number, text) in enumerate(lines):
        adjacent = index + 1 < len(lines) and lines[index + 1][0] == number + 1
        following = lines[index + 1][1].lstrip(" #") if adjacent else ""
        for match in HISTORY.finditer(f"{text} {following}"):
            if match.start() < len(text):
                found.append(f"{where(path)}:{number}: {match.group()!r} in {text.strip()!r}")
    return found


@pytest.mark.parametrize("path", DOCS, ids=where)
def test_a_doc_states_the_present(path):
    lines = list(enumerate(path.read_text().splitlines(), start=1))
    found = history(lines, path)
    assert not found, "history belongs in CHANGELOG.md:\n" + "\n".join(found)


@pytest.mark.parametrize("path", MODULES, ids=where)
def test_the_graders_comments_state_the_present(path):
    found = history(prose_lines(path), path)
    assert not found, "history belongs in CHANGELOG.md:\n" + "\n".join(found)


def test_a_history_marker_is_found_where_it_is_planted(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text(
        '"""A module.\n\nThe guard of issue 44."""\n\n'
        "X = 'issue 7 in a string is code, not prose'\n"
        "# the second wave's attacks\n"
        "# as issue\n# 12 asked\n"
    )
    found = history(prose_lines(planted), planted)
    assert [line.split(": ")[0].rsplit(":", 1)[1] for line in found] == ["3", "6", "7"]
    assert not history(prose_lines(planted), planted)[0].endswith("code, not prose'")


def test_a_history_marker_is_found_with_its_line_in_a_doc(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text("# Grading\n\nThe tolerance is fixed.\nThe first Wave of attacks, issue 3.\nA microwave.\n")
    found = history(list(enumerate(doc.read_text().splitlines(), start=1)), doc)
    assert [line.split(": ")[0].rsplit(":", 1)[1] for line in found] == ["4", "4"]


def test_the_changelog_keeps_its_form():
    """CHANGELOG.md in Keep a Changelog's form: Unreleased first, then one section per date, newest first, each
    made of the form's kinds of change."""
    text = (ROOT / "CHANGELOG.md").read_text()
    releases = re.findall(r"^## (.+)$", text, re.MULTILINE)
    assert releases[0] == "[Unreleased]"
    dates = releases[1:]
    assert dates and all(re.fullmatch(r"\d{4}-\d{2}-\d{2}", date) for date in dates), dates
    assert dates == sorted(set(dates), reverse=True)
    kinds = set(re.findall(r"^### (.+)$", text, re.MULTILINE))
    assert kinds <= {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}, kinds
