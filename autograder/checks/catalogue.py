"""The hidden checks' names and declared facts (function, category, inputs exercised, picture), read from their
source without running them."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

CHECKS = Path(__file__).parent


@dataclass(frozen=True)
class Entry:
    check: str
    function: str
    category: str
    doc: str
    exercises: tuple[str, ...] = ()
    picture: str | None = None


def catalogue() -> list[Entry]:
    """Every hidden check, in the order pytest runs them."""
    entries = []
    for path in sorted(CHECKS.glob("check_*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                for decorator in node.decorator_list:
                    if isinstance(decorator, ast.Call) and getattr(decorator.func, "attr", "") == "check":
                        marks = {k.arg: ast.literal_eval(k.value) for k in decorator.keywords}
                        doc = ast.get_docstring(node) or ""
                        entries.append(
                            Entry(
                                node.name.removeprefix("test_"),
                                marks["function"],
                                marks["category"],
                                doc,
                                tuple(marks.get("exercises", ())),
                                marks.get("picture"),
                            )
                        )
    return entries
