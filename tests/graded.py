"""What a test module grades, graded once for the module: the module names it as ``GRADED`` and takes the
``graded`` fixture (tests/conftest.py). Two kinds: files graded with one zygote in each of the worker's modes
(``Sandboxed``), or a class folder graded by one real ``sdpa-grade batch`` (``Batch``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.attacks import MODES, grade_all
from tests.helpers import BIN, FAST_LIMITS, REFERENCE, ROOT, SUBMISSIONS, run


@dataclass(frozen=True)
class Sandboxed:
    """The files ``files(base)`` writes under ``base``, graded with one zygote, the worker in each of ``modes`` (the
    fixture is parametrised by them) under ``limits`` (tests/attacks.grade_all)."""

    files: Callable[[Path], list[Path]]
    limits: str = FAST_LIMITS
    timeout: float = 900
    modes: tuple[str, ...] = tuple(MODES)

    def grade(self, base: Path, mode: str) -> dict:
        """{"results": {stem: {"result", "wall"}}, "zygote": the zygote's folder}."""
        return grade_all(mode, base, self.files(base), self.limits, self.timeout)


@dataclass(frozen=True)
class Batch:
    """A class folder, filled by ``write(folder)``, graded by ``sdpa-grade batch FOLDER --json-dir OUT`` with
    ``options(base)`` after them (files the options name go under ``base``)."""

    write: Callable[[Path], None]
    options: Callable[[Path], list[str]] = lambda base: []
    timeout: float = 900
    modes: tuple[str, ...] = ()

    def grade(self, base: Path, mode: None = None) -> dict:
        """{"result": the finished command, "base", "folder", "out": the results folder, "results": {student: the
        results file read}}."""
        folder, out = base / "submitted", base / "grades"
        folder.mkdir()
        self.write(folder)
        command = [str(BIN / "sdpa-grade"), "batch", str(folder), "--json-dir", str(out), *self.options(base)]
        result = run(command, timeout=self.timeout)
        results = {path.stem: json.loads(path.read_text()) for path in out.glob("*.json")} if out.is_dir() else {}
        return {"result": result, "base": base, "folder": folder, "out": out, "results": results}


# the grading cases (tests/grading_cases.py) of honest and mistaken code, graded in tests/grading/test_grading.py; the
# rest (attacks, crashes, odd files) in tests/grading/test_grading_hostile.py: one class each, graded apart
WORK = ("mistake_", "misattr_", "edge_", "correct_")


def is_work(name: str) -> bool:
    """Whether the grading case ``name`` is honest or mistaken code (the reference and the template included)."""
    return name.startswith(WORK) or name in ("reference", "template")


def class_of_cases(folder: Path, keep: Callable[[str], bool]) -> None:
    """One file per grading case that ``keep`` takes: standalone submissions as they are, overlays appended to the
    reference, the reference and the untouched template."""
    reference = REFERENCE.read_text()
    for path in sorted((SUBMISSIONS / "standalone").glob("*.py")):
        if keep(path.stem):
            (folder / path.name).write_text(path.read_text())
    for path in sorted((SUBMISSIONS / "overlays").glob("*.py")):
        if keep(path.stem):
            (folder / path.name).write_text(f"{reference}\n\n# --- {path.name} ---\n{path.read_text()}")
    if keep("reference"):
        (folder / "reference.py").write_text(reference)
    if keep("template"):
        (folder / "template.py").write_text((ROOT / "student_template" / "attention.py").read_text())


def fast(base: Path) -> list[str]:
    """A batch's options: two at a time, a CSV, and the suite's quick limits (FAST_LIMITS), written under ``base``."""
    (base / "fast.toml").write_text(FAST_LIMITS)
    return ["--jobs", "2", "--csv", str(base / "grades.csv"), "--config", str(base / "fast.toml")]
