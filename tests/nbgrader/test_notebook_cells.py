"""A notebook's feedback names the cell (counted from the notebook's top, every cell included, as the student counts
them) and the line within it, wherever a line of the student's is cited: exceptions in calls and at load, the load
failure's sentence, integrity's findings. Never "attention.py, line N" for a notebook."""

from __future__ import annotations

import json

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from autograder.checks.integrity import dynamic_reach, fused_uses, tampering
from autograder.checks.loading import explain
from autograder.read.submission import notebook_source
from autograder.sandbox.student_side import serving
from tests.helpers import BIN, REFERENCE, run

TEST_CELL = {"nbgrader": {"grade": True, "solution": False, "grade_id": "t", "points": 1}}


def _notebook(*cells) -> str:
    """A notebook whose first two cells are markdown and a test cell (not graded, still counted), then ``cells``."""
    return nbformat.writes(new_notebook(cells=[new_markdown_cell("# Attention"),
                                               new_code_cell("assert True", metadata=TEST_CELL), *cells]))  # fmt: skip


def test_each_cell_runs_under_its_place_in_the_notebook():
    """The graded source runs each code cell under its number in the notebook (markdown and test cells counted), and
    the cells' code is read back from the source by that number."""
    from autograder.read.submission import cells_of

    source = notebook_source(_notebook(new_code_cell("x = 1"), new_markdown_cell("text"), new_code_cell("y = 2")))
    assert "'cell3/attention.py'" in source and "'cell5/attention.py'" in source and "cell1/" not in source
    assert cells_of(source) == {3: "x = 1", 5: "y = 2"}
    assert cells_of("import torch\n") == {}


def test_an_exception_in_a_cell_names_the_cell_and_its_line():
    """The worker's message for an exception raised in a notebook's cell: "(cell N, line M)", not attention.py."""
    source = notebook_source(_notebook(new_code_cell("def f():\n    x = 1\n    raise ValueError('oops')")))
    namespace: dict = {}
    exec(compile(source, "attention.py", "exec"), namespace)
    try:
        namespace["f"]()
    except ValueError as error:
        message = serving._error(error)["message"]
    assert message == "oops (cell 3, line 3)", message
    try:
        exec(compile("def g():\n    raise KeyError('k')\ng()", "/scratch/attention.py", "exec"), {})
    except KeyError as error:
        assert serving._error(error)["message"] == "'k' (attention.py, line 2)"


def test_a_load_failure_in_a_cell_quotes_the_cells_line():
    """A notebook that does not load: the sentence names the cell and quotes its line, not a line of the grader's
    wrapper around the cells."""
    source = notebook_source(_notebook(new_code_cell("import subprocess\n\nsubprocess.run(['true'])")))
    said = explain("PermissionError", "[Errno 1] Operation not permitted (cell 3, line 3)", source, "your notebook",
                   allowed=("torch",))  # fmt: skip
    assert said.startswith("your notebook could not be loaded: cell 3, line 3 (`subprocess.run(['true'])`) runs a"), (
        said
    )
    assert "attention.py, line" not in said
    said = explain("SystemExit", "3 (cell 3, line 1)", source, "your notebook", allowed=("torch",))
    assert said == "your notebook could not be loaded: SystemExit: 3 (cell 3, line 1)"


def test_integrity_findings_name_the_cell():
    """Fused attention, reach into internals and tampering found in a notebook's cell are cited by cell and line."""
    code = "import torch.nn.functional as F\n\ndef a(q, k, v):\n    return F.scaled_dot_product_attention(q, k, v)\n"
    source = notebook_source(_notebook(new_code_cell(code), new_code_cell("import torch\ntorch._C._x = 1")))
    assert fused_uses(source) == ["cell 3, line 4: .scaled_dot_product_attention"], fused_uses(source)
    assert any(found.startswith("cell 4, line 2") for found in dynamic_reach(source)), dynamic_reach(source)
    tampered = tampering(
        notebook_source(_notebook(new_code_cell("x = 1"), new_code_cell("import torch\ntorch.matmul = 1")))
    )
    assert all(where.startswith("cell 4, line 2") for found in tampered.values() for where in found), tampered


def test_a_graded_notebook_cites_cells_not_attention_py(tmp_path):
    """sdpa-grade on a notebook whose scale_scores raises and whose last cell reaches into torch's internals: its
    results cite the cell and line, and call it "your notebook", never attention.py."""
    nb = nbformat.read(REFERENCE.parent.parent / "assignments" / "source" / "sdpa" / "sdpa.ipynb", as_version=4)
    [position] = [
        n for n, c in enumerate(nb.cells, 1) if c.metadata.get("nbgrader", {}).get("grade_id") == "scale_scores"
    ]
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("solution"):
            cell.source = "\n".join(line for line in cell.source.splitlines() if "### " not in line)
    nb.cells[position - 1].source = "def scale_scores(scores, d_k):\n    x = 1\n    raise ValueError('oops')\n"
    nb.cells.append(nbformat.v4.new_code_cell("import torch\n\nhidden = torch._C._get_tracing_state"))
    path = tmp_path / "sdpa.ipynb"
    nbformat.write(nb, path)
    result = run([str(BIN / "sdpa-grade"), "grade", str(path), "--json", str(tmp_path / "r.json")], timeout=240)
    assert result.returncode == 0, result.stderr[-2000:]
    outputs = [test["output"] for test in json.loads((tmp_path / "r.json").read_text())["tests"]]
    assert f"scale_scores failed: ValueError: oops (cell {position}, line 3)" in outputs, outputs[:3]
    reach = next(output for output in outputs if "reaches into torch's internals" in output)
    assert reach.startswith("your notebook reaches into torch's internals") and f"cell {len(nb.cells)}, line 3" in reach
    assert not any("attention.py" in output for output in outputs), [o for o in outputs if "attention.py" in o]
