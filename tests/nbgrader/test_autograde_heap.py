"""What nbgrader's process holds when its first notebook is graded (nbgrader_path/autograde.py, shared_zygote)."""

from __future__ import annotations

import json
import sys

import pytest

from tests.helpers import ROOT, run

NOTEBOOK = ROOT / "assignments" / "source" / "sdpa" / "sdpa.ipynb"
# one notebook graded by GradeNotebook in a fresh process, as nbgrader's process grades its first one
FIRST_NOTEBOOK = """
import gc, json, sys
import nbformat
from autograder.nbgrader_path.autograde import GradeNotebook

nb = nbformat.read(sys.argv[1], as_version=4)
GradeNotebook().preprocess(nb, {})
errors = [c for c in nb.cells if any(o.output_type == "error" for o in c.get("outputs", []))]
failed = [c.metadata["nbgrader"]["grade_id"] for c in errors]
print(json.dumps({"frozen": gc.get_freeze_count(), "failed": failed}))
"""


@pytest.mark.slow  # a whole grading in a fresh process: torch imported twice (the grader's, the zygote's)
def test_the_first_notebook_leaves_what_the_process_holds_out_of_the_cycle_collector():
    """By the first notebook's grading the process has frozen what it holds (nbgrader's, torch's and pytest's
    objects) out of the cycle collector (gc.freeze), so that no later collection walks it, as a batch's child walks
    only its own; the solved notebook still passes every hidden check."""
    result = run([sys.executable, "-c", FIRST_NOTEBOOK, str(NOTEBOOK)], timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen["failed"] == []
    assert seen["frozen"] > 100_000, seen
