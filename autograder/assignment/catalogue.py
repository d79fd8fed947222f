"""The hidden checks and their declared facts (function, category, points, inputs exercised, picture), read from
their source without running them: the one place a check's facts are written is its own marker.

Everything that lists the checks reads them here: the settings (each check's points, which a settings file may
only override), the released notebook, docs/grading.md's table (``sdpa-build``), the bench's value checks and the
tests' expectations.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path

CHECKS = Path(__file__).parent.parent / "checks"  # autograder/checks/


@dataclass(frozen=True)
class Entry:
    check: str
    function: str
    category: str
    points: float
    doc: str
    exercises: tuple[str, ...] = ()
    picture: str | None = None
    module: str = ""  # the module that holds it: check_1_pieces
    tolerance: bool = False  # its code compares values within settings.tolerance(...), itself or through a helper


def catalogue(folder: Path = CHECKS) -> list[Entry]:
    """Every hidden check (of ``folder``, the checks' by default), in the order pytest runs them."""
    entries = []
    for path in sorted(folder.glob("check_*.py")):
        stat = path.stat()
        entries += _entries(path, stat.st_mtime_ns, stat.st_size)
    return entries


@functools.lru_cache(maxsize=64)
def _entries(path: Path, mtime_ns: int, size: int) -> tuple[Entry, ...]:
    """One check file's entries, parsed once per version of the file (every load of the settings reads the points:
    parsing the five files each time cost 40 ms of a 53 ms load_settings)."""
    tree = ast.parse(path.read_text())
    helpers = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    entries = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            for decorator in node.decorator_list:
                if isinstance(decorator, ast.Call) and getattr(decorator.func, "attr", "") == "check":
                    marks = {k.arg: ast.literal_eval(k.value) for k in decorator.keywords}
                    entries.append(
                        Entry(
                            node.name.removeprefix("test_"),
                            marks["function"],
                            marks["category"],
                            marks.get("points"),
                            ast.get_docstring(node) or "",
                            tuple(marks.get("exercises", ())),
                            marks.get("picture"),
                            path.stem,
                            _uses_tolerance(node, helpers, {node.name}),
                        )
                    )
    return tuple(entries)


def points() -> dict[str, float]:
    """Each check's points as its marker declares them, in the checks' order (a settings file may override them)."""
    return {entry.check: entry.points for entry in catalogue()}


def _uses_tolerance(function: ast.FunctionDef, helpers: dict[str, ast.FunctionDef], seen: set[str]) -> bool:
    """Whether ``function`` calls ``settings.tolerance(...)``, itself or through a function of its module it calls."""
    for node in ast.walk(function):
        if not isinstance(node, ast.Call):
            continue
        called = node.func
        if (
            isinstance(called, ast.Attribute)
            and called.attr == "tolerance"
            and getattr(called.value, "id", "") == "settings"
        ):
            return True
        if isinstance(called, ast.Name) and called.id in helpers and called.id not in seen:
            if _uses_tolerance(helpers[called.id], helpers, seen | {called.id}):
                return True
    return False
