"""nbgrader's autograde step as the course configures it (autograder/nbgrader_path/autograde.py): GradeNotebook in
the place of nbgrader's Execute, the hidden cells it fills, the course's settings file (its points must be the
notebook's, and then nbgrader's export gives what sdpa-grade gives), and a [deadline] that nbgrader's gradebook does not
hold."""

from __future__ import annotations

import json
import os
import shutil

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook
from traitlets.config import Config

from autograder.checks.quiz import QUESTIONS
from autograder.config import load_settings
from autograder.nbgrader_path.autograde import GradeNotebook, GraderFailed, points_mismatch
from tests.helpers import BIN, ROOT, answered, nbgrader, run
from tests.nbgrader.common import NOTEBOOK, cells_of, exported_scores


def test_hidden_cells_hold_no_code_and_no_answer():
    """Every hidden check's and question's cell is comments only: nothing for a kernel to run, no answer to print."""
    cells = cells_of("check_")
    assert len(cells) > len(QUESTIONS)
    for cell in cells:
        source = "".join(cell["source"])
        assert all(line.startswith("#") for line in source.splitlines()), source
        assert "autograder" not in source.replace("# The autograder", "")
    for question in QUESTIONS:
        assert not [c for c in cells if f"{question.name} = {question.answer!r}" in "".join(c["source"])]


def test_autograde_runs_no_kernel():
    """The course's nbgrader_config.py puts GradeNotebook in the place of nbgrader's Execute
    and keeps the other steps."""
    from nbgrader.converters import Autograde
    from nbgrader.preprocessors import Execute

    config = Config()
    path = ROOT / "assignments" / "nbgrader_config.py"
    exec(compile(path.read_text(), str(path), "exec"), {"get_config": lambda: config, "__file__": str(path)})  # noqa: S102 - as nbgrader reads it
    steps = list(config.Autograde.autograde_preprocessors)
    default = Autograde.class_traits()["autograde_preprocessors"].default()
    ours = "autograder.nbgrader_path.autograde.GradeNotebook"
    assert Execute not in steps and steps[default.index(Execute)] == ours
    assert [s for s in steps if s != ours] == [s for s in default if s is not Execute]


def test_an_unknown_hidden_cell_is_the_graders_failure():
    """A graded cell named after no check stops the notebook's autograde (nbgrader reports it), before any grading."""
    cell = new_code_cell(
        "# Hidden check nothing",
        metadata={
            "nbgrader": {
                "grade": True,
                "solution": False,
                "locked": True,
                "grade_id": "check_no_such_check",
                "points": 1,
                "schema_version": 3,
            }
        },
    )
    with pytest.raises(GraderFailed, match="check_no_such_check names no check"):
        GradeNotebook().preprocess(new_notebook(cells=[cell]), {})


def test_points_the_settings_give_otherwise_stop_the_notebook_before_grading(tmp_path):
    """settings_file gives scale_values 5 points, the notebook's cell (the gradebook's) 2: nbgrader would score the
    cell's 2 while sdpa-grade grade --config scores 5, so the notebook's autograde stops, naming the cell, both values
    and the file, before any grading; with the settings' points in the cell, the check passes on to grading."""
    course = tmp_path / "course.toml"
    course.write_text("[points]\nscale_values = 5\n")
    cell = next(
        c
        for c in nbformat.read(NOTEBOOK, as_version=4).cells
        if c.metadata.get("nbgrader", {}).get("grade_id") == "check_scale_values"
    )
    with pytest.raises(GraderFailed) as refused:
        GradeNotebook(settings_file=str(course)).preprocess(new_notebook(cells=[cell]), {})
    assert f"grading settings ({course} (--config))" in str(refused.value)
    assert "check_scale_values is worth 2 in the notebook, 5 in [points] scale_values" in str(refused.value)
    cell.metadata["nbgrader"]["points"] = 5
    assert GradeNotebook(settings_file=str(course)).settings().points["scale_values"] == 5
    assert points_mismatch([cell], GradeNotebook(settings_file=str(course)).settings().points) == []


@pytest.mark.slow  # 15 s measured on 2 loaded cores: nbgrader makes its gradebook through alembic
@pytest.mark.timeout(120)
def test_a_deadline_nbgrader_does_not_hold_is_warned(tmp_path, monkeypatch):
    """[deadline] set but nbgrader's assignment has no due date (nbgrader then never asks the late plugin), or one
    later than [deadline].due: a warning naming the command that fixes it; the same due date: none."""
    import os
    from datetime import datetime

    from nbgrader.api import Gradebook

    from autograder.assignment.deadline import parse
    from autograder.nbgrader_path.late_plugin import due_date_problem
    from tests.helpers import BIN

    monkeypatch.setenv("PATH", f"{BIN}{os.pathsep}{os.environ['PATH']}")  # nbgrader makes its db with alembic
    db = f"sqlite:///{tmp_path / 'gradebook.db'}"
    deadline = parse({"due": "2026-12-01T23:59:00-05:00", "policy": "per_day", "percent": 10}, "course.toml")
    with Gradebook(db) as gradebook:
        gradebook.add_assignment("sdpa")
        gradebook.add_assignment("late", duedate=datetime(2026, 12, 3, 4, 59))
        gradebook.add_assignment("same", duedate=datetime(2026, 12, 2, 4, 59))
    said = due_date_problem(db, "sdpa", deadline)
    assert "nbgrader's assignment sdpa has no due date" in said and "no late penalty" in said
    assert 'nbgrader db assignment add sdpa --duedate="2026-12-02 04:59:00 UTC"' in said
    assert "later than [deadline].due" in due_date_problem(db, "late", deadline)
    assert due_date_problem(db, "same", deadline) == ""
    assert due_date_problem(db, "sdpa", parse({}, "course.toml")) == ""


@pytest.fixture(scope="module")
def course_with_settings(tmp_path_factory):
    """The course, its nbgrader_config.py naming course.toml as GradeNotebook's settings_file, its source notebook's
    check_scale_values cell worth 5; the assignment generated; bob's notebook (scores divided by d_k) in submitted/,
    as collect leaves it: (course, environment, bob's notebook). Each test writes course.toml first."""
    course = tmp_path_factory.mktemp("settings") / "course"
    shutil.copytree(
        ROOT / "assignments",
        course,
        ignore=shutil.ignore_patterns("release", "submitted", "autograded", "feedback", "exchange", "gradebook.db"),
    )
    with open(course / "nbgrader_config.py", "a") as config:
        config.write('\nc.GradeNotebook.settings_file = "course.toml"\n')
    path = course / "source" / "sdpa" / "sdpa.ipynb"
    source = nbformat.read(path, as_version=4)
    cell = next(c for c in source.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "check_scale_values")
    cell.metadata["nbgrader"]["points"] = 5
    nbformat.write(source, path)
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    nbgrader("generate_assignment", "sdpa", "--force", cwd=course, env=env)
    release = nbformat.read(course / "release" / "sdpa" / "sdpa.ipynb", as_version=4)
    bob = {"scale_scores": "import math\n\n\ndef scale_scores(scores, d_k):\n    return scores / d_k\n"}
    submitted = course / "submitted" / "bob" / "sdpa" / "sdpa.ipynb"
    submitted.parent.mkdir(parents=True)
    nbformat.write(answered(release, source, bob), submitted)
    return course, env, submitted


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_nbgrader_refuses_a_settings_file_whose_points_are_not_the_notebooks(course_with_settings):
    """c.GradeNotebook.settings_file = "course.toml": while it gives scale_values 7 points and the notebook's cell is
    worth 5, nbgrader's autograde refuses the notebook, naming the cell, both values and the file (once it gave the
    defaults, silently)."""
    course, env, _ = course_with_settings
    (course / "course.toml").write_text("[points]\nscale_values = 7\n")
    refused = run([str(BIN / "nbgrader"), "autograde", "sdpa", "--force"], cwd=course, env=env, timeout=110)
    said = refused.stdout + refused.stderr
    assert "check_scale_values is worth 5 in the notebook, 7 in [points] scale_values" in said, said[-3000:]
    assert "course.toml (--config)" in said


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_nbgrader_grades_with_the_courses_settings_file(course_with_settings, tmp_path):
    """With 5 on both sides, nbgrader's autograde and export give bob what `sdpa-grade grade --config course.toml`
    gives him, out of the same maximum, the knowledge check included on both."""
    course, env, submitted = course_with_settings
    (course / "course.toml").write_text("[points]\nscale_values = 5\n")
    nbgrader("autograde", "sdpa", "--force", cwd=course, env=env)
    nbgrader("export", cwd=course, env=env)
    exported = exported_scores(course)["bob"]
    command = [str(BIN / "sdpa-grade"), "grade", str(submitted), "--config", str(course / "course.toml"),
               "--json", str(tmp_path / "bob.json")]  # fmt: skip
    result = run(command, timeout=110)
    assert result.returncode == 0, result.stderr[-3000:]
    graded = json.loads((tmp_path / "bob.json").read_text())
    quiz = len(QUESTIONS)  # one point each; bob answers every question right
    settings = load_settings(course / "course.toml", environ={})
    assert graded["max_score"] == sum(v for k, v in settings.points.items() if k != "timing_gpu") + quiz  # no GPU here
    assert exported == (graded["score"], graded["max_score"])
    assert next(t for t in graded["tests"] if t["name"].endswith("scale_values"))["score"] == 0
