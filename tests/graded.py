"""What a test module grades, graded once for the module: the module names it as ``GRADED`` and takes the
``graded`` fixture (tests/conftest.py). Three kinds: files graded with one zygote in each of the worker's modes
(``Sandboxed``), a class folder graded by one real ``sdpa-grade batch`` (``Batch``), or the grading cases that a
module takes, in parts of a few each graded by its own real ``sdpa-grade batch`` (``Cases``), so that no test waits
for a whole class's batch (at most 120 s a test, its fixture's setup included)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.attacks import MODES, grade_all
from tests.helpers import BIN, FAST_LIMITS, REFERENCE, ROOT, SUBMISSIONS, run


@dataclass(frozen=True)
class Sandboxed:
    """The files ``files(base)`` writes under ``base``, graded with one zygote, the worker in each of ``workers``
    under ``limits`` (tests/attacks.grade_all); with ``parts`` (groups of file stems), each group with a zygote of its
    own, so that no test waits for them all. The fixture is parametrised by ``modes``: each worker's mode, or each
    pairing of a worker's mode and a part (``root-part1``); a test about named files takes ``each``."""

    files: Callable[[Path], list[Path]]
    limits: str = FAST_LIMITS
    timeout: float = 120
    workers: tuple[str, ...] = tuple(MODES)
    parts: tuple[tuple[str, ...], ...] = ()

    @property
    def modes(self) -> tuple[str, ...]:
        return tuple(f"{worker}-part{index + 1}" for worker in self.workers for index in range(len(self.parts))) or (
            self.workers
        )

    def each(self, names) -> pytest.MarkDecorator:
        """Parametrise a test by ``name`` over ``names``, in every worker's mode, each with its part as ``graded``."""
        part = {name: f"part{index + 1}" for index, names in enumerate(self.parts) for name in names}
        cases = [
            pytest.param(f"{worker}-{part[name]}" if self.parts else worker, name, id=f"{worker}-{name}")
            for worker in self.workers
            for name in names
        ]
        return pytest.mark.parametrize(("graded", "name"), cases, indirect=["graded"], scope="module")

    def grade(self, base: Path, mode: str) -> dict:
        """{"results": {stem: {"result", "wall"}}, "zygote": the zygote's folder}."""
        worker, _, part = mode.partition("-part")
        files = self.files(base)
        if part:
            files = [path for path in files if path.stem in self.parts[int(part) - 1]]
        return grade_all(worker, base, files, self.limits, self.timeout)


def worker_of(mode: str) -> str:
    """The worker's mode (root, unprivileged) of the ``graded`` fixture's parameter ``mode``."""
    return mode.partition("-part")[0]


@dataclass(frozen=True)
class Batch:
    """A class folder, filled by ``write(folder)``, graded by ``sdpa-grade batch FOLDER --json-dir OUT`` with
    ``options(base)`` after them (files the options name go under ``base``)."""

    write: Callable[[Path], None]
    options: Callable[[Path], list[str]] = lambda base: []
    timeout: float = 120
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


def case_names() -> list[str]:
    """Every grading case's file stem: the standalone submissions, the overlays, the reference and the template."""
    stems = {path.stem for kind in ("standalone", "overlays") for path in (SUBMISSIONS / kind).glob("*.py")}
    return sorted(stems | {"reference", "template"})


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


@dataclass(frozen=True)
class Cases:
    """The grading cases ``keep`` takes (``case_names``), in ``parts`` parts of consecutive names, each graded by one
    real ``sdpa-grade batch`` with ``fast``'s options and ``settings``: the ``graded`` fixture is parametrised by the
    part (one class summary and one results folder each), and a test about named cases takes the parts that hold them
    (``each``, ``having``), so that only the first test of a part waits for it (a part's batch, not the class's)."""

    keep: Callable[[str], bool]
    parts: int
    settings: str = ""
    timeout: float = 120
    names: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", tuple(filter(self.keep, case_names())))

    @property
    def modes(self) -> tuple[str, ...]:
        """The parts' names, the fixture's parameters: ``part1`` to ``partN``."""
        return tuple(f"part{index + 1}" for index in range(self.parts))

    def part_of(self, name: str) -> str:
        """The part that grades the case ``name``: the names in order, cut into ``parts`` runs of near one size."""
        return self.modes[self.names.index(name) * self.parts // len(self.names)]

    def each(self, names) -> pytest.MarkDecorator:
        """Parametrise a test by ``name`` over ``names``, each with the part that grades it as ``graded``."""
        cases = [pytest.param(self.part_of(name), name, id=name) for name in names]
        return pytest.mark.parametrize(("graded", "name"), cases, indirect=["graded"], scope="module")

    def having(self, *names: str) -> pytest.MarkDecorator:
        """Give a test the one part that grades all of ``names`` as ``graded`` (they must share one)."""
        parts = {self.part_of(name) for name in names}
        if len(parts) != 1:
            raise ValueError(f"{names} are graded in {sorted(parts)}: a test reads one part's class summary")
        return pytest.mark.parametrize("graded", sorted(parts), indirect=True, scope="module")

    def grade(self, base: Path, part: str) -> dict:
        """The part ``part`` graded as ``Batch.grade`` grades its class folder."""
        mine = {name for name in self.names if self.part_of(name) == part}
        options = lambda base: fast(base, self.settings)  # noqa: E731
        return Batch(lambda folder: class_of_cases(folder, mine.__contains__), options, self.timeout).grade(base)


def fast(base: Path, settings: str = "") -> list[str]:
    """A batch's options: two at a time, a CSV, and the suite's quick limits (FAST_LIMITS) with ``settings`` after
    them, written under ``base``."""
    (base / "fast.toml").write_text(f"{FAST_LIMITS}\n{settings}")
    return ["--jobs", "2", "--csv", str(base / "grades.csv"), "--config", str(base / "fast.toml")]
