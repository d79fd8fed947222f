"""The knowledge check in a notebook (autograder/checks/quiz.py): each question's verdict, answers read and never
run, and which cell holds an answer (a pasted copy, a cell whose nbgrader metadata was dropped), alike on nbgrader's
path and sdpa-grade's."""

from __future__ import annotations

import ast
import json

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from autograder.checks.quiz import BY_NAME, QUESTIONS, answer_in, verdict
from tests.nbgrader.common import NOTEBOOK, cells_of


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


def test_question_names_are_known():
    """Every question of the knowledge check is found by its name (the check cells' grade ids)."""
    assert set(BY_NAME) == {q.name for q in QUESTIONS}
    assert {c["metadata"]["nbgrader"]["grade_id"] for c in cells_of("check_q_")} == {
        f"check_{q.name}" for q in QUESTIONS
    }
    assert nbformat.validate(nbformat.read(NOTEBOOK, as_version=4)) is None


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
