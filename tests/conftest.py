"""Fixtures shared by the test folders, each defined once here (a folder's own fixtures are in its conftest.py;
helpers that are not fixtures live in tests/helpers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import limits, with_overlay


@pytest.fixture(scope="module")
def graded(request, tmp_path_factory):
    """What this test module grades, its ``GRADED`` (tests/graded.py: ``Sandboxed`` or ``Batch``), graded once for
    the module: in each worker mode ``GRADED.modes`` names, one after the other (pytest_generate_tests below)."""
    mode = getattr(request, "param", None)
    base = tmp_path_factory.mktemp(f"{request.module.__name__.rsplit('.', 1)[-1]}-{mode or 'batch'}")
    return request.module.GRADED.grade(base, mode)


def pytest_generate_tests(metafunc):
    """A test that takes ``graded`` runs once per worker mode its module's ``GRADED.modes`` names."""
    if "graded" in metafunc.fixturenames and getattr(getattr(metafunc.module, "GRADED", None), "modes", ()):
        metafunc.parametrize("graded", metafunc.module.GRADED.modes, indirect=True, scope="module")


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


@pytest.fixture
def graded_class(tmp_path: Path):
    """``graded_class(result, names=("alice", "bob"))``: a class folder (one empty folder per student) and its results
    folder, each student's results ``result``, as a batch leaves them: (class folder, results folder)."""
    import json

    def make(result: dict, names: tuple[str, ...] = ("alice", "bob")) -> tuple[Path, Path]:
        folder, out = tmp_path / "submitted", tmp_path / "grades"
        out.mkdir()
        for name in names:
            (folder / name).mkdir(parents=True)
            (out / f"{name}.json").write_text(json.dumps(result))
        return folder, out

    return make


@pytest.fixture
def overlay(tmp_path: Path):
    """``overlay(name)``: this test's attention.py, the reference with the overlay ``name`` appended
    (tests/helpers.with_overlay)."""

    def make(name: str | None) -> Path:
        path = tmp_path / "attention.py"
        path.write_text(with_overlay(name))
        return path

    return make
