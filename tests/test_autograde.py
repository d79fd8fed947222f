"""nbgrader's autograde step (nbgrader_path/autograde.py), the knowledge check's verdicts, and the cells they fill."""

from __future__ import annotations

import ast
import json

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook
from traitlets.config import Config

from autograder.nbgrader_path.autograde import GradeNotebook, GraderFailed, points_mismatch
from autograder.release.quiz import BY_NAME, QUESTIONS, answer_in, verdict
from tests.helpers import ROOT

NOTEBOOK = ROOT / "assignments" / "source" / "sdpa" / "sdpa.ipynb"


def _cells(grade_prefix: str) -> list[dict]:
    notebook = json.loads(NOTEBOOK.read_text())
    return [
        cell
        for cell in notebook["cells"]
        if cell["metadata"].get("nbgrader", {}).get("grade_id", "").startswith(grade_prefix)
    ]


def test_hidden_cells_hold_no_code_and_no_answer():
    """Every hidden check's and question's cell is comments only: nothing for a kernel to run, no answer to print."""
    cells = _cells("check_")
    assert len(cells) > len(QUESTIONS)
    for cell in cells:
        source = "".join(cell["source"])
        assert all(line.startswith("#") for line in source.splitlines()), source
        assert "autograder" not in source.replace("# The autograder", "")
    for question in QUESTIONS:
        assert not [c for c in cells if f"{question.name} = {question.answer!r}" in "".join(c["source"])]


@pytest.mark.parametrize("question", QUESTIONS, ids=lambda q: q.name)
def test_the_right_answer_passes_and_a_wrong_one_does_not_give_it_away(question):
    """The source's answer passes; the example's placeholder fails with a message that never holds the answer."""
    assert verdict(question.name, f"{question.name} = {question.answer!r}") == ""
    wrong = not question.answer if isinstance(question.answer, bool) else ast.literal_eval(question.example)
    message = verdict(question.name, f"# my answer\n{question.name} = {wrong!r}\n")
    assert message.startswith(f"{wrong!r} is not the expected answer") and f"reread '{question.section}'" in message
    if not isinstance(question.answer, bool):  # (a True-or-False question's message names the form: True or False)
        assert repr(question.answer) not in message


def test_answers_are_read_never_run(tmp_path):
    """An answer cell's code is never run: an expression, a call or an import gets a message, and has no effect."""
    marker = tmp_path / "ran"
    run_it = f"q_variance = __import__('pathlib').Path({str(marker)!r}).touch() or 64"
    assert "written out" in verdict("q_variance", run_it) and not marker.exists()
    assert "written out" in verdict("q_variance", "q_variance = 8 * 8")
    assert verdict("q_variance", "q_variance = 0\nq_variance = 64.0") == ""  # the last assignment counts
    shape = BY_NAME["q_scores_shape"].answer  # the lesson's ([lesson] in the settings)
    assert answer_in(f"q_scores_shape = {shape}  # Q K^T", "q_scores_shape") == shape
    assert "does not set q_variance" in verdict("q_variance", "# YOUR CODE HERE\nraise NotImplementedError()")
    assert "not valid Python" in verdict("q_variance", "q_variance = (")
    assert "over 10000 characters" in verdict("q_variance", "q_variance = 64" + " " * 10_000)


def test_a_long_wrong_answer_is_shown_cut():
    """A wrong answer is repeated in the feedback, cut to 100 characters."""
    message = verdict("q_causal_keys", f"q_causal_keys = {list(range(1000))}")
    assert message.startswith("[0, 1, 2") and message.split(" is not")[0].endswith("...")
    assert len(message.split(" is not")[0]) == 100


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


def test_question_names_are_known():
    """Every question of the knowledge check is found by its name (the check cells' grade ids)."""
    assert set(BY_NAME) == {q.name for q in QUESTIONS}
    assert {c["metadata"]["nbgrader"]["grade_id"] for c in _cells("check_q_")} == {f"check_{q.name}" for q in QUESTIONS}
    assert nbformat.validate(nbformat.read(NOTEBOOK, as_version=4)) is None


def test_points_the_settings_give_otherwise_stop_the_notebook_before_grading(tmp_path):
    """settings_file gives scale_values 5 points, the notebook's cell (the gradebook's) 2: nbgrader would score the
    cell's 2 while sdpa-grade --config scores 5, so the notebook's autograde stops, naming the cell, both values and
    the file, before any grading; with the settings' points in the cell, the check passes on to grading."""
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
