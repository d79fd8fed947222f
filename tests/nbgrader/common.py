"""What the nbgrader tests share that is not a fixture (fixtures: conftest.py beside this file)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from tests.helpers import ROOT

NOTEBOOK = ROOT / "assignments" / "source" / "sdpa" / "sdpa.ipynb"  # the course's source notebook


def cells_of(grade_prefix: str) -> list[dict]:
    """The source notebook's graded cells whose grade id starts with ``grade_prefix``."""
    notebook = json.loads(NOTEBOOK.read_text())
    return [
        cell
        for cell in notebook["cells"]
        if cell["metadata"].get("nbgrader", {}).get("grade_id", "").startswith(grade_prefix)
    ]


def exported_scores(course: Path) -> dict[str, tuple[float, float]]:
    """Each student's (score, max_score) in the grades.csv that ``nbgrader export`` wrote in ``course``."""
    with open(course / "grades.csv") as handle:
        return {row["student_id"]: (float(row["score"]), float(row["max_score"])) for row in csv.DictReader(handle)}
