"""Fixtures of the nbgrader tests (the ones every folder shares are in tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import nbgrader_course as made_course


@pytest.fixture
def nbgrader_course(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """(course folder, environment): a copy of assignments/ in this test's folder, its assignment generated
    (tests/helpers.nbgrader_course)."""
    return made_course(tmp_path)
