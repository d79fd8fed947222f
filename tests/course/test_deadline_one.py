"""One submission graded alone (`sdpa-grade FILE`) under a [deadline]: where its time comes from, and why not."""

from __future__ import annotations

import json

import pytest

from tests.helpers import BIN, run

COURSE_TOML = '[deadline]\ndue = "2026-03-01T12:00:00Z"\npolicy = "per_day"\npercent = 10\n'
NOT_A_NOTEBOOK = "not a notebook"  # ungradable (score 0): the time is still taken, and the grading is quick


def _grade(path, tmp_path, *extra):
    (tmp_path / "course.toml").write_text(COURSE_TOML)
    out = tmp_path / "out.json"
    done = run([str(BIN / "sdpa-grade"), str(path), "--config", str(tmp_path / "course.toml"), "--json", str(out),
                *extra], timeout=250)  # fmt: skip
    return done, json.loads(out.read_text())["extra_data"]["late"]


def _collected(tmp_path, course_file="nbgrader_config.py"):
    """submitted/alice/sdpa/sdpa.ipynb with nbgrader's timestamp.txt beside it, in a course (``course_file`` beside
    submitted/; None: a plain folder)."""
    folder = tmp_path / "course" / "submitted" / "alice" / "sdpa"
    folder.mkdir(parents=True)
    if course_file:
        (tmp_path / "course" / course_file).write_text("c = get_config()\n")
    (folder / "sdpa.ipynb").write_text(NOT_A_NOTEBOOK)
    (folder / "timestamp.txt").write_text("2026-03-02 12:00:01.500000 UTC")
    return folder / "sdpa.ipynb"


@pytest.mark.timeout(300)
def test_a_collected_notebook_graded_alone_takes_nbgraders_time(tmp_path):
    """submitted/alice/sdpa/sdpa.ipynb in an nbgrader course, graded alone: its time is nbgrader's timestamp.txt
    beside it (a day and a second late: 2 days begun), and the student is alice, as the batch names her."""
    done, late = _grade(_collected(tmp_path), tmp_path)
    assert done.returncode == 2, done.stderr  # ungradable: nothing to grade, its results file written all the same
    assert late["submitted_at"] == "2026-03-02T12:00:01.500000+00:00" and not late["missing_time"]
    assert late["hours_late"] == pytest.approx(24 + 1.5 / 3600)


@pytest.mark.timeout(300)
def test_a_notebook_outside_an_nbgrader_course_says_why_no_time_was_taken(tmp_path):
    """The same folders with no nbgrader_config.py or gradebook.db beside submitted/: its timestamp.txt is not
    believed, no penalty is taken, and the output says why (stderr, and the result's time_problem)."""
    done, late = _grade(_collected(tmp_path, course_file=None), tmp_path)
    assert late["missing_time"] and late["late_penalty"] == 0
    assert "not in an nbgrader course's submitted/<student>/sdpa/ folder" in late["time_problem"]
    assert f"sdpa-grade: no late penalty applied: {late['time_problem']}" in done.stderr


@pytest.mark.timeout(300)
def test_submitted_at_takes_nbgraders_format(tmp_path):
    """--submitted-at "2026-03-01 12:00:00.123456 UTC", as nbgrader's timestamp.txt holds it, is taken; so is an
    offset (+0100)."""
    path = tmp_path / "attention.py"
    done, late = _grade(path, tmp_path, "--submitted-at", "2026-03-01 12:00:13.123456 UTC")
    assert "Invalid --submitted-at" not in done.stderr, done.stderr
    assert late["submitted_at"] == "2026-03-01T12:00:13.123456+00:00" and late["late_penalty"] == 0  # scored 0
    done, late = _grade(path, tmp_path, "--submitted-at", "2026-03-01 13:00:13 +0100")
    assert late["submitted_at"] == "2026-03-01T13:00:13+01:00", done.stderr
