"""nbgrader's feedback page, on real nbgrader, for a student whose attention forgets to scale and whose variance
raises in its cell: the module's check that kept its points says so, the attention's withheld integrity check says
it is withheld and why, and the variance's error is cited by its cell and line, never by attention.py."""

from __future__ import annotations

import html
import os
import re
import shutil

import nbformat
import pytest

from tests.helpers import BIN, ROOT, run

pytestmark = pytest.mark.slow
MARKERS = re.compile(r"^\s*### (BEGIN|END) SOLUTION\s*$\n?", re.MULTILINE)
STUDENT = {  # the attention forgets to scale (its own mistake); the variance raises in its cell
    "scaled_dot_product_attention": (
        "def scaled_dot_product_attention(Q, K, V, mask=None, is_causal=False):\n"
        "    if is_causal:\n"
        "        causal = causal_mask(Q.size(-2), K.size(-2), device=Q.device)\n"
        "        mask = causal if mask is None else mask & causal\n"
        "    weights = masked_softmax(attention_scores(Q, K), mask)\n"
        "    return attention_output(weights, V), weights\n"
    ),
    "dot_product_variance": (
        "def dot_product_variance(d_k, num_samples=10000, generator=None):\n    x = 1\n    raise ValueError('oops')\n"
    ),
}


def nbgrader(*args, cwd, env):
    result = run([str(BIN / "nbgrader"), *args], cwd=cwd, env=env, timeout=600)
    assert result.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{result.stderr[-3000:]}"


@pytest.fixture(scope="module")
def feedback(tmp_path_factory) -> dict:
    """One student's whole cycle: release, fetch, submit, collect, autograde, generate_feedback."""
    base = tmp_path_factory.mktemp("verdicts")
    course = base / "course"
    shutil.copytree(ROOT / "assignments", course, ignore=shutil.ignore_patterns(
        "release", "submitted", "autograded", "feedback", "exchange", "gradebook.db"))  # fmt: skip
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    nbgrader("generate_assignment", "sdpa", "--force", cwd=course, env=env)
    nbgrader("release_assignment", "sdpa", "--force", cwd=course, env=env)
    source = nbformat.read(course / "source" / "sdpa" / "sdpa.ipynb", as_version=4)
    solutions = {c.metadata["nbgrader"]["grade_id"]: c.source for c in source.cells
                 if c.metadata.get("nbgrader", {}).get("solution")}  # fmt: skip
    home, exchange = base / "dave", course / "exchange"
    home.mkdir()
    student_env = {**env, "USER": "dave", "LOGNAME": "dave"}
    where = ("--course", "sdpa-course", f"--Exchange.root={exchange}")
    nbgrader("fetch_assignment", "sdpa", *where, cwd=home, env=student_env)
    path = home / "sdpa" / "sdpa.ipynb"
    notebook = nbformat.read(path, as_version=4)
    for cell in notebook.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if cell.metadata.get("nbgrader", {}).get("solution"):
            cell.source = STUDENT.get(grade_id, MARKERS.sub("", solutions[grade_id]))
    nbformat.write(notebook, path)
    nbgrader("submit", "sdpa", *where, "--student=dave", cwd=home, env=student_env)
    for step in ("collect", "autograde", "generate_feedback"):
        nbgrader(step, "sdpa", *(("--force",) if step != "collect" else ()), cwd=course, env=env)
    page = (course / "feedback" / "dave" / "sdpa" / "sdpa.html").read_text()
    cells = {c.metadata.get("nbgrader", {}).get("grade_id"): n for n, c in enumerate(notebook.cells, 1)}
    return {"page": page, "cells": cells}


def output_of(page: str, grade_id: str) -> str:
    """The text of a graded cell's outputs on the feedback page."""
    start = page.index(f'<a name="{grade_id}"></a>')
    outputs = page[start:].split('<div class="output_wrapper">', 1)[1].split('<div class="cell ', 1)[0]
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", outputs))).strip()


def test_a_carried_check_says_kept_its_points(feedback):
    """The module's check fails only through the attention: "kept its points" and why, no "failed"."""
    shown = output_of(feedback["page"], "check_mha_matches_torch")
    assert shown.startswith("mha_matches_torch: kept its points"), shown
    assert "Correct once scaled_dot_product_attention is fixed" in shown and ": failed" not in shown


def test_a_withheld_check_says_withheld_and_why(feedback):
    """The attention's integrity check: withheld, not awarded yet, and what awards it; never a bare 0."""
    shown = output_of(feedback["page"], "check_integrity_sdpa")
    assert shown.startswith("integrity_sdpa: withheld (not awarded yet)"), shown
    assert "once scaled_dot_product_attention passes its own correctness checks" in shown, shown


def test_an_error_in_a_cell_is_cited_by_the_cell(feedback):
    """The variance's error names its cell (counted from the top) and line, never attention.py."""
    shown = output_of(feedback["page"], "check_variance_close")
    cell = feedback["cells"]["dot_product_variance"]
    assert f"ValueError: oops (cell {cell}, line 3)" in shown, shown
    assert "attention.py, line" not in feedback["page"]
