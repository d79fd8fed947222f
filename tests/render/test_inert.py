"""Student text is inert in the terminal table, the CSV and the HTML page; the JSON keeps it, escaped as JSON."""

from __future__ import annotations

import csv
import json

from autograder.course.class_results import class_results
from autograder.course.grades_csv import write_csv
from autograder.render.html import student_page
from autograder.render.inert import inert
from autograder.render.terminal import table
from tests.helpers import maximum

FULL = f"{maximum():g}/{maximum():g}"  # a forged total line claiming full marks
HOSTILE = (
    f"scale_scores failed: ValueError: \x1b[2J\x1b]0;graded\x07\x1b]52;c;cm0=\x07\x1b[5A\rtotal {FULL}\n\u202eevil"
)
RESULT = {
    "score": 2,
    "max_score": 4,
    "tests": [
        {"name": "scale_scores: scale_values", "score": 0, "max_score": 2, "output": HOSTILE},
        {"name": "attention_scores: scores_shape\x1b[8m", "score": 2, "max_score": 2, "output": "passed"},
    ],
}
CONTROLS = [chr(c) for c in range(32) if c != 10] + ["\x7f", "\x9b", "\u202e", "\u2028"]


def test_inert_shows_every_control_character_as_its_escape():
    """ESC, BEL, CR, C1 controls, bidi overrides and line separators become visible escapes; newlines may stay."""
    assert inert("a\x1b[31mb\x07\r\u202e\n") == "a\\x1b[31mb\\x07\\x0d\\u202e\n"
    assert inert("a\nb", keep_newlines=False) == "a\\x0ab"


def test_the_terminal_table_runs_no_escape_sequence():
    """The table shows the student's escapes as text; its extra lines stay indented under their check."""
    text = table(RESULT)
    assert not any(c in text for c in CONTROLS)
    assert "\\x1b]52;c;" in text
    assert [line for line in text.splitlines() if line.startswith("total")] == ["total" + " " * 51 + " 2/4"]


def test_the_html_page_and_the_csv_hold_no_control_character(tmp_path):
    """The feedback page and the grades CSV carry no control character from a student's text or name."""
    page = student_page("x", RESULT)
    assert not any(c in page for c in CONTROLS if c != "\n")
    path = tmp_path / "grades.csv"
    write_csv(path, class_results({"eve\x1b[2J": RESULT}))
    rows = list(csv.reader(path.open()))
    assert rows[1][0] == "eve\\x1b[2J"


def test_the_json_keeps_the_text():
    """results.json keeps the student's text as it was (JSON escapes it)."""
    assert json.loads(json.dumps(RESULT))["tests"][0]["output"] == HOSTILE
