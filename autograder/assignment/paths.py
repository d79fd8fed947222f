"""Where the released files live, relative to the repository's root (the build and the notebook both need them)."""

from __future__ import annotations

from pathlib import Path

REFERENCE = Path("reference/attention.py")
TEMPLATE = Path("student_template/attention.py")
NOTEBOOK = Path("assignments/source/sdpa/sdpa.ipynb")  # the nbgrader source notebook; released under its name
REQUIREMENTS = TEMPLATE.with_name("requirements.txt")
