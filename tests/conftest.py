"""Fixtures shared by the test folders, each defined once here (a folder's own fixtures are in its conftest.py;
helpers that are not fixtures live in tests/helpers.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers import limits, with_overlay


@pytest.fixture(scope="module")
def graded(request, grading):
    """What this test module grades, its ``GRADED`` (tests/graded.py: ``Sandboxed``, ``Batch`` or ``Cases``), graded
    once in each worker mode or part ``GRADED.modes`` names (pytest_generate_tests below)."""
    return grading(request.module.GRADED, getattr(request, "param", None))


@pytest.fixture(scope="session")
def grading(tmp_path_factory):
    """``grading(what, mode)``: ``what.grade`` (tests/graded.py) in the worker mode or part ``mode``, once for this
    pytest process (an xdist worker): a test that comes back to a mode or part after another finds it graded, or its
    failure raised again (not waited for again)."""
    done: dict[tuple, dict | Exception] = {}

    def grade(what, mode: str | None) -> dict:
        if (what, mode) not in done:
            base = tmp_path_factory.mktemp(f"{type(what).__name__}-{mode or 'batch'}")
            try:
                done[what, mode] = what.grade(base, mode)
            except Exception as error:  # a time-out, a failed assertion: each test that reads it fails with it
                done[what, mode] = error
        if isinstance(done[what, mode], Exception):
            raise done[what, mode]
        return done[what, mode]

    return grade


@pytest.fixture(scope="session")
def shared(tmp_path_factory):
    """``shared(key, make)``: the folder ``make(folder)`` filled for ``key``, made once for the whole session, its
    xdist workers together (a folder under the session's base folder, which the workers share), and where it was
    made (a venv in it is not moved): the first worker to ask makes it, holding a lock, and the others wait for it
    and read it; a ``make`` that raised raises again for each later asker, with its message."""
    import fcntl
    import hashlib
    import os

    base = tmp_path_factory.getbasetemp()
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "shared"
    root.mkdir(exist_ok=True)

    def once(key: str, make) -> Path:
        folder = root / hashlib.sha256(key.encode()).hexdigest()[:16]
        done, failed = Path(f"{folder}.done"), Path(f"{folder}.failed")
        with open(f"{folder}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes: by the maker, or at its death
            if not done.exists() and not failed.exists():
                shutil.rmtree(folder, ignore_errors=True)  # a maker killed half-way
                folder.mkdir()
                try:
                    make(folder)
                except BaseException as error:
                    failed.write_text(f"{type(error).__name__}: {error}")
                    raise
                done.touch()
        if failed.exists():
            raise RuntimeError(f"made once for the session, and it failed: {failed.read_text()}")
        return folder

    return once


@pytest.fixture(scope="session")
def gradescope_set_up(shared):
    """``gradescope_set_up(bundle, folder)``: the Gradescope bundle unpacked into ``folder``/autograder as Gradescope
    does, with the venv its setup.sh makes: setup.sh runs once in the session for each setup.sh and wheel (a bundle
    built with other settings differs in its config.toml alone, which stays its own), and its venv is linked as
    ``folder``/autograder/venv. Returns (the fake /autograder, setup.sh's finished run)."""
    import hashlib
    import json
    import subprocess
    import zipfile

    from tests.helpers import setup, unpack

    def set_up(bundle: Path, folder: Path) -> tuple[Path, subprocess.CompletedProcess]:
        root = unpack(bundle, folder)
        source = root / "source"
        (wheel,) = source.glob("*.whl")
        with zipfile.ZipFile(wheel) as archive:  # the files' hashes, not the archive's times
            record = archive.read(next(name for name in archive.namelist() if name.endswith(".dist-info/RECORD")))
        key = "\0".join(["gradescope setup.sh", (source / "setup.sh").read_text(), wheel.name, record.decode()])

        def make(into: Path) -> None:
            done = setup(unpack(bundle, into))
            fields = {"args": done.args, "returncode": done.returncode, "stdout": done.stdout, "stderr": done.stderr}
            (into / "setup.json").write_text(json.dumps(fields))

        made = shared(hashlib.sha256(key.encode()).hexdigest(), make)
        (root / "venv").symlink_to(made / "autograder" / "venv", target_is_directory=True)
        return root, subprocess.CompletedProcess(**json.loads((made / "setup.json").read_text()))

    return set_up


@pytest.fixture(scope="session")
def graded_file(tmp_path_factory):
    """``graded_file(path, *options)``: (the finished command, its results.json read) of ``sdpa-grade grade path --json
    OUT *options``, run once for this pytest process (an xdist worker) per file name, content and options: the
    reference and the source notebook are graded by several tests, which read the one grading (read only)."""
    import hashlib
    import json

    from tests.helpers import BIN, run

    done: dict[tuple, tuple] = {}

    def grade(path: Path, *options: str) -> tuple:
        key = (path.name, hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else str(path), options)
        if key not in done:
            out = tmp_path_factory.mktemp("graded-file") / "results.json"
            result = run([str(BIN / "sdpa-grade"), "grade", str(path), "--json", str(out), *options])
            done[key] = result, json.loads(out.read_text())
        return done[key]

    return grade


def pytest_generate_tests(metafunc):
    """A test that takes ``graded`` runs once per worker mode or part its module's ``GRADED.modes`` names, unless it
    names its own (``Cases.each``, ``Cases.having``)."""
    modes = getattr(getattr(metafunc.module, "GRADED", None), "modes", ())
    if "graded" in metafunc.fixturenames and modes and not _parametrises_graded(metafunc):
        metafunc.parametrize("graded", modes, indirect=True, scope="module")


def _parametrises_graded(metafunc) -> bool:
    """Whether the test's own parametrize marks name ``graded``."""
    for mark in metafunc.definition.iter_markers("parametrize"):
        names = mark.args[0]
        if "graded" in ([name.strip() for name in names.split(",")] if isinstance(names, str) else names):
            return True
    return False


@pytest.fixture
def sandbox(tmp_path: Path):
    """``sandbox(source, **options)``: a sandbox (not yet started) for ``source`` written as this test's attention.py,
    with a 2 GB memory limit, 64 kB of output, 10 s to load and 1 s after a hang (``options``: Sandbox's own)."""
    from autograder.sandbox.client import Sandbox

    def make(source: str, **options) -> Sandbox:
        path = tmp_path / "attention.py"
        path.write_text(source)
        return Sandbox(path, limits(memory_mb=2048, output_kb=64, load_timeout=10, after_hang_timeout=1), **options)

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


# seconds: the most a test may take on two quiet cores, its fixtures' setup included (issue 57), and so the most a
# test may declare with pytest.mark.timeout; a test that needs more is made smaller, its sweep a bench (bench/)
LONGEST = 120


def pytest_collection_modifyitems(config, items):
    """Refuse the run where a collected test declares a timeout over ``LONGEST``, naming each."""
    declared = ((item.nodeid, mark.args[0]) for item in items for mark in item.iter_markers("timeout") if mark.args)
    too_long = [f"{nodeid}: timeout({seconds})" for nodeid, seconds in declared if seconds > LONGEST]
    if too_long:
        raise pytest.UsageError(f"a test may declare at most {LONGEST} s (tests/conftest.py):\n" + "\n".join(too_long))
