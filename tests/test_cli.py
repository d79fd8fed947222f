"""`sdpa-grade` on one submission, as an instructor runs it: terminal table, results.json, exit codes."""

from __future__ import annotations

import json
import os

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

from autograder.plugin import CATEGORIES
from autograder.submission import notebook_source
from tests.helpers import BIN, REFERENCE, ROOT, run

SOURCE_NOTEBOOK = ROOT / "assignments" / "source" / "sdpa" / "sdpa.ipynb"


def grade(path, tmp_path, *extra):
    out = tmp_path / "results.json"
    result = run([str(BIN / "sdpa-grade"), str(path), "--json", str(out), *extra])
    return result, json.loads(out.read_text())


def test_reference_gets_full_marks_in_gradescope_format(tmp_path):
    """Exit 0, a table ending in the total, and a results.json Gradescope can read, with tags."""
    result, results = grade(REFERENCE, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "total" in result.stdout and "55/55" in result.stdout
    assert set(results) >= {"score", "execution_time", "output", "tests"}
    assert results["score"] == 55 == sum(test["score"] for test in results["tests"])
    for test in results["tests"]:
        assert set(test) >= {"name", "score", "max_score", "output", "visibility", "tags"}
        function, category = test["tags"]
        assert category in CATEGORIES and function in test["name"]


def test_notebook_with_solutions_gets_full_marks(tmp_path):
    """The source notebook (solution and set-up cells, not its test cells) grades like the reference."""
    result, results = grade(SOURCE_NOTEBOOK, tmp_path)
    assert result.returncode == 0, result.stderr
    assert results["score"] == 55


def test_missing_submission_exits_2_with_a_results_file(tmp_path):
    """A path that does not exist: exit 2 and the reason on stderr, and still a valid results file (0 of the usual maximum)."""
    result, results = grade(tmp_path / "nothing.py", tmp_path)
    assert result.returncode == 2, result.stderr
    assert "does not exist" in result.stderr
    assert results["score"] == 0 and "does not exist" in results["output"]
    assert results["max_score"] == 55


def test_folder_without_a_submission_exits_2(tmp_path):
    """A folder that holds no attention.py and no notebook is a missing submission too."""
    folder = tmp_path / "alice"
    folder.mkdir()
    result, results = grade(folder, tmp_path)
    assert result.returncode == 2, result.stderr
    assert "no attention.py or notebook" in result.stderr and results["score"] == 0


def test_every_submission_has_the_same_maximum(tmp_path):
    """Loadable, unloadable or ungradable: on one machine every results file has the same max_score."""
    broken = tmp_path / "broken.py"
    broken.write_text("def attention_scores(Q, K)\n    return Q\n")
    empty = tmp_path / "empty.py"
    empty.write_text("")
    maxima = {grade(path, tmp_path)[1]["max_score"] for path in (REFERENCE, broken, empty)}
    assert maxima == {55}


def test_a_load_error_is_told_once(tmp_path):
    """A syntax error is explained in one check; the others point there instead of repeating it."""
    broken = tmp_path / "broken.py"
    broken.write_text("def attention_scores(Q, K)\n    return Q\n")
    result, results = grade(broken, tmp_path)
    assert result.returncode == 0
    assert sum("SyntaxError" in test["output"] for test in results["tests"]) == 1
    assert result.stdout.count("SyntaxError") == 1
    first = next(test for test in results["tests"] if "SyntaxError" in test["output"])
    check = first["extra_data"]["check"]
    others = [test for test in results["tests"] if test is not first and test["max_score"] > 0]
    assert all(f"under {check}" in test["output"] for test in others), others[0]["output"]


def test_wrong_kind_of_file_is_ungradable(tmp_path):
    """A file that is neither .py nor .ipynb gets a clear reason."""
    path = tmp_path / "attention.txt"
    path.write_text("x = 1\n")
    _, results = grade(path, tmp_path)
    assert "neither a .py file nor a notebook" in results["ungradable"]


def test_notebook_cells_skip_magics_tests_and_keep_going(tmp_path):
    """Magics and shell escapes are dropped, test cells left out, and one failing cell does not stop the next."""
    notebook = new_notebook(cells=[
        new_code_cell("%matplotlib inline\n!pip install nothing\nimport torch"),
        new_code_cell("raise NotImplementedError()"),
        new_code_cell("def scale_scores(scores, d_k):\n    return scores / d_k ** 0.5"),
        new_code_cell("assert False", metadata={"nbgrader": {"grade": True, "solution": False, "grade_id": "t", "points": 1}}),
    ])  # fmt: skip
    source = notebook_source(nbformat.writes(notebook))
    assert "matplotlib" not in source and "pip install" not in source and "assert False" not in source
    namespace: dict = {}
    exec(compile(source, "attention.py", "exec"), namespace)
    assert namespace["scale_scores"](4.0, 4) == 2.0


def test_grader_needs_a_submission_or_a_batch():
    """No arguments: a usage error (exit 2), not a traceback."""
    result = run([str(BIN / "sdpa-grade")])
    assert result.returncode == 2 and "give a SUBMISSION" in result.stderr


def test_grader_failure_still_writes_results(tmp_path):
    """When the grader itself is broken (here: a broken reference shadows the real one), exit 3 and a valid results.json."""
    broken = tmp_path / "shadow" / "reference"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("")
    (broken / "attention.py").write_text("raise ImportError('a broken install')\n")
    out = tmp_path / "results.json"
    env = {**os.environ, "PYTHONPATH": str(broken.parent)}
    result = run([str(BIN / "sdpa-grade"), str(REFERENCE), "--json", str(out)], env=env)
    assert result.returncode == 3, result.stderr
    assert "the grader failed" in result.stderr
    results = json.loads(out.read_text())
    assert results["score"] == 0 and "a broken install" in results["grader_error"]
