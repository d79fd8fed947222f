"""nbgrader's autograde step (nbgrader_path/autograde.py), the knowledge check's verdicts, and the cells they fill."""

from __future__ import annotations

import ast
import json

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook
from traitlets.config import Config

from autograder.checks.quiz import BY_NAME, QUESTIONS, answer_in, verdict
from autograder.nbgrader_path.autograde import GradeNotebook, GraderFailed, points_mismatch
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


def _answer(name: str, source: str, **meta) -> nbformat.NotebookNode:
    nbgrader = {"grade_id": name, "solution": True, "grade": False, "locked": False, "schema_version": 3} | meta
    return new_code_cell(source, metadata={"nbgrader": nbgrader})


def test_a_pasted_answer_cell_is_graded_by_its_last_copy_on_both_paths():
    """Two cells marked as q_variance's answer (a pasted copy, the last one right): both paths grade the last copy
    (nbgrader's DeduplicateIds keeps its metadata on the last; sdpa-grade read the first before) and say so."""
    from autograder.checks.quiz import answer_cells, results
    from autograder.nbgrader_path.autograde import DeduplicateIds

    nb = new_notebook(cells=[new_code_cell("import torch"), _answer("q_variance", "q_variance = 0"),
                             _answer("q_variance", "q_variance = 64")])  # fmt: skip
    [test] = [test for test in results(nb.cells, "visible") if test["extra_data"]["check"] == "q_variance"]
    assert test["score"] == test["max_score"]
    assert (
        test["output"]
        == "Correct.\ncells 2 and 3 are all q_variance's answer cell (a pasted copy?): the last, cell 3, is graded"
    )
    before = answer_cells(nb.cells)["q_variance"]
    sanitized = DeduplicateIds().preprocess(nbformat.from_dict(json.loads(nbformat.writes(nb))), {})[0]
    assert "nbgrader" not in sanitized.cells[1].metadata  # nbgrader's ids stay unique
    assert answer_cells(sanitized.cells)["q_variance"] == before  # the nbgrader path finds the same cell, same note


def test_an_answer_cell_without_its_metadata_is_found_by_what_it_sets():
    """JupyterLab's Merge drops the merged cell's nbgrader metadata: the answer is the last cell (not a test cell)
    that sets the name, said in the feedback; a marked cell, where there is one, comes first."""
    from autograder.checks.quiz import answer_cells, results

    merged = new_code_cell("# Why scale?\nimport math\nq_variance = 64\nq_why_scale = 'b'")
    test_cell = new_code_cell("q_variance = 1", metadata={"nbgrader": {"grade": True, "solution": False,
                                                                         "grade_id": "t", "points": 1}})  # fmt: skip
    nb = new_notebook(cells=[new_code_cell("q_variance = 0"), merged, test_cell])
    scored = {test["extra_data"]["check"]: test for test in results(nb.cells, "visible")}
    assert scored["q_variance"]["score"] == 1 and scored["q_why_scale"]["score"] == 1
    assert "no cell is marked as q_variance's answer cell" in scored["q_variance"]["output"]
    assert "cell 2, the last that sets q_variance, is graded" in scored["q_variance"]["output"]
    assert "does not set q_formula" in scored["q_formula"]["output"]
    nb.cells.insert(0, _answer("q_variance", "q_variance = 8"))
    assert answer_cells(nb.cells)["q_variance"].source == "q_variance = 8"  # the marked cell, where there is one
