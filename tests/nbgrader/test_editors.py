"""A notebook from any editor grades the same on both paths (nbgrader's whole autograde and sdpa-grade batch), full
marks for a correct one whatever the editor did: VS Code's serializer (nbformat 4.4, Windows line endings) with two
hidden-check cells deleted, a pasted copy of an answer cell (the last copy right), an answer cell whose metadata a
Merge dropped, a 20.7 MB printed output, and a notebook handed in under JupyterLab's copy name (a browser's copy name,
``sdpa (1).ipynb``, is the same rule: tests/nbgrader/test_renamed.py and tests/reading/test_graded_file.py).

Each notebook is made from the released one in the editor's output format (nbformat, then the editor's habits:
minor version, line endings, missing metadata), written into nbgrader's submitted/ folder as collect leaves it."""

from __future__ import annotations

import copy
import json

import nbformat
import pytest
from nbformat.v4 import new_output

from tests.helpers import BIN, answered, nbgrader, nbgrader_course, run, total

pytestmark = pytest.mark.slow
PRINTED = "tensor([[0.1234, 0.5678, 0.9012, 0.3456]])\n"


def _index(notebook, grade_id: str) -> int:
    return next(i for i, c in enumerate(notebook.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def _vscode(notebook) -> bytes:
    """VS Code's serializer on Windows: nbformat 4.4 (no cell ids), indent 1, CRLF line endings in the file and in
    every cell's source; the hidden cells of timing_cpu and integrity_mha deleted."""
    for grade_id in ("check_timing_cpu", "check_integrity_mha"):
        del notebook.cells[_index(notebook, grade_id)]
    data = json.loads(nbformat.writes(notebook))
    data["nbformat_minor"] = 4
    for cell in data["cells"]:
        cell.pop("id", None)
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        cell["source"] = [line.replace("\n", "\r\n") for line in source.splitlines(keepends=True)]
    return (json.dumps(data, indent=1, ensure_ascii=False) + "\n").replace("\n", "\r\n").encode()


def _pasted(notebook) -> bytes:
    """q_formula's answer cell copied and pasted below it (Jupyter copies its nbgrader id); the first copy wrong."""
    at = _index(notebook, "q_formula")
    pasted = copy.deepcopy(notebook.cells[at])
    pasted["id"] = "pasted-copy"
    notebook.cells[at].source = 'q_formula = "a"'
    notebook.cells.insert(at + 1, pasted)
    return nbformat.writes(notebook).encode()


def _merged(notebook) -> bytes:
    """q_variance's answer cell merged with a code cell of the student's (JupyterLab's Merge drops its metadata)."""
    cell = notebook.cells[_index(notebook, "q_variance")]
    del cell.metadata["nbgrader"]
    cell.source = f"import math\nprint(math.sqrt(64))\n{cell.source}"
    return nbformat.writes(notebook).encode()


def _printed(notebook) -> bytes:
    """A cell that printed 20.7 MB, saved with its output."""
    cell = notebook.cells[_index(notebook, "scale_scores")]
    cell.outputs = [new_output("stream", name="stdout", text=PRINTED * int(20.7e6 / len(PRINTED)))]
    return nbformat.writes(notebook).encode()


# student -> (the file's name in submitted/<student>/sdpa/, what the editor made of the answered notebook)
STUDENTS = {
    "vscode_deleted_checks": ("sdpa.ipynb", _vscode),
    "pasted_answer": ("sdpa.ipynb", _pasted),
    "merged_answer": ("sdpa.ipynb", _merged),
    "printed_20mb": ("sdpa.ipynb", _printed),
    "lab_copy": ("sdpa-Copy1.ipynb", lambda notebook: nbformat.writes(notebook).encode()),
}


@pytest.fixture(scope="module")
def both_paths(tmp_path_factory):
    """Each student's notebook graded by sdpa-grade batch on submitted/, then by nbgrader autograde."""
    course, env = nbgrader_course(tmp_path_factory.mktemp("editors"))
    source = nbformat.read(course / "source" / "sdpa" / "sdpa.ipynb", as_version=4)
    release = nbformat.read(course / "release" / "sdpa" / "sdpa.ipynb", as_version=4)
    for student, (name, make) in STUDENTS.items():
        folder = course / "submitted" / student / "sdpa"
        folder.mkdir(parents=True)
        (folder / name).write_bytes(make(answered(release, source, {})))
    assert (course / "submitted" / "printed_20mb" / "sdpa" / "sdpa.ipynb").stat().st_size > 20_700_000
    out = course.parent / "grades"
    batch = run([str(BIN / "sdpa-grade"), "batch", str(course / "submitted"), "--json-dir", str(out)], timeout=120)
    assert batch.returncode == 0, batch.stdout[-2000:] + batch.stderr[-3000:]
    done = nbgrader("autograde", "sdpa", "--force", cwd=course, env=env)
    return {"course": course, "out": out, "log": done.stdout + done.stderr}


def _nbgrader_scores(course) -> dict[str, float]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "sdpa-course") as gradebook:
        return {student: gradebook.find_submission("sdpa", student).score for student in STUDENTS}


@pytest.mark.timeout(120)
def test_every_editors_notebook_gets_full_marks_on_both_paths(both_paths):
    """A correct notebook scores full marks on nbgrader and on sdpa-grade, whatever the editor did to it."""
    full = total(notebook=True)
    on_nbgrader = _nbgrader_scores(both_paths["course"])
    on_sdpa_grade = {s: json.loads((both_paths["out"] / f"{s}.json").read_text())["score"] for s in STUDENTS}
    assert on_nbgrader == dict.fromkeys(STUDENTS, full), both_paths["log"][-3000:]
    assert on_sdpa_grade == dict.fromkeys(STUDENTS, full)


@pytest.mark.timeout(120)
def test_how_a_cell_was_chosen_is_said_on_both_paths(both_paths):
    """The pasted answer's and the merged answer's feedback names the cell graded, in results.json and in the
    autograded notebook's check cell; a renamed notebook is named in nbgrader's log, with the reason."""
    for student, question, said in (
        ("pasted_answer", "q_formula", "(a pasted copy?): the last, cell"),
        ("merged_answer", "q_variance", "no cell is marked as q_variance's answer cell"),
    ):
        tests = json.loads((both_paths["out"] / f"{student}.json").read_text())["tests"]
        assert said in next(t["output"] for t in tests if t["extra_data"]["check"] == question)
        notebook = nbformat.read(both_paths["course"] / "autograded" / student / "sdpa" / "sdpa.ipynb", as_version=4)
        shown = "".join(o.get("text", "") for o in notebook.cells[_index(notebook, f"check_{question}")].outputs)
        assert said in shown, shown
    for student, name in (("lab_copy", "sdpa-Copy1.ipynb"),):
        assert f"{student} handed in no sdpa.ipynb: sdpa/{name} is graded in its place" in both_paths["log"]
