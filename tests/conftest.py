"""Fixtures shared by the project's tests, each defined once here (helpers that are not fixtures live in
tests/helpers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import limits


@pytest.fixture
def sandbox(tmp_path: Path):
    """``sandbox(source)``: a sandbox (not yet started) for ``source`` written as this test's attention.py, with a
    2 GB memory limit, 64 kB of output, 10 s to load and 1 s after a hang."""
    from autograder.sandbox.client import Sandbox

    def make(source: str) -> Sandbox:
        path = tmp_path / "attention.py"
        path.write_text(source)
        return Sandbox(path, limits(memory_mb=2048, output_kb=64, load_timeout=10, after_hang_timeout=1))

    return make
