"""The tree shows the trust boundary: imports between autograder's folders go one way only."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT

PACKAGE = ROOT / "autograder"


def imports(path: Path) -> set[str]:
    """Every module ``path`` imports, at any depth (imports inside functions included)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def ours(path: Path) -> set[str]:
    return {name for name in imports(path) if name.split(".")[0] in ("autograder", "reference")}


def modules(folder: str) -> list[Path]:
    return sorted((PACKAGE / folder).glob("*.py"))


def where(path: Path) -> str:
    return str(path.relative_to(PACKAGE))


@pytest.mark.parametrize("path", sorted((PACKAGE / "sandbox").rglob("*.py")), ids=where)
def test_sandbox_imports_nothing_from_grading(path):
    """The sandbox imports nothing of the grader but the sandbox itself (no grading, scoring, release, reference)."""
    outside = {name for name in ours(path) if not name.startswith("autograder.sandbox")}
    assert not outside, f"{path.name} imports {sorted(outside)}"


# what runs in the student's process: the folder the runner copies whole beside the worker
BESIDE_THE_STUDENT = modules("sandbox/student_side")


def test_the_library_folder_holds_the_folder_beside_the_student(tmp_path):
    """The runner copies the folder whole into the worker's library folder: its modules (not its __init__.py) are the
    files there, the rest are links to site-packages."""
    from autograder.sandbox.runner import _library_folder

    lib = _library_folder(tmp_path)
    copied = {path.name for path in lib.iterdir() if not path.is_symlink()}
    assert copied == {path.name for path in BESIDE_THE_STUDENT} - {"__init__.py"}
    assert "worker.py" in copied and "runner.py" not in copied


def relative(path: Path) -> set[str]:
    """The modules ``path`` imports relatively (``from . import x``, ``from .x import y``), as ``.x`` / ``..x``."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            dots = "." * node.level
            found |= {dots + node.module} if node.module else {dots + alias.name for alias in node.names}
    return found


@pytest.mark.parametrize("path", BESIDE_THE_STUDENT, ids=lambda p: p.name)
def test_code_beside_the_student_imports_only_stdlib_and_torch(path):
    """The modules copied beside the student run in the student's process: the standard library, torch and each
    other only (top-level modules there; on the grader's side, where its tests import them, ``from . import``)."""
    folder = {module.stem for module in BESIDE_THE_STUDENT}
    allowed = set(sys.stdlib_module_names) | {"torch", *folder}
    found = {module.split(".")[0] for module in imports(path)}
    assert found <= allowed, f"{path.name} imports {sorted(found - allowed)}"
    outside = {name for name in relative(path) if name.removeprefix(".") not in folder}
    assert not outside, f"{path.name} imports {sorted(outside)}, outside its folder"


@pytest.mark.parametrize("path", sorted((PACKAGE / "checks").glob("check_*.py")), ids=lambda p: p.name)
def test_checks_reach_student_code_only_through_the_proxy(path):
    """A hidden check imports neither the sandbox nor the nbgrader front end: it gets the proxy as a fixture."""
    reaching = {name for name in ours(path) if name.startswith(("autograder.sandbox", "autograder.nbgrader_path"))}
    assert not reaching, f"{path.name} imports {sorted(reaching)}"


@pytest.mark.parametrize("path", sorted((PACKAGE / "checks").glob("*.py")), ids=lambda p: p.name)
def test_checks_fail_through_check_failure_not_assert(path):
    """pytest runs the checks with ``--assert=plain`` (grade._pytest): an assert statement there would fail as the
    grader's error, without the values it compared."""
    asserts = [node.lineno for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.Assert)]
    assert not asserts, f"{path.name} has assert statements at lines {asserts}: raise CheckFailure (expect.fail)"


@pytest.mark.parametrize("folder", ["sandbox", "checks"])
def test_inner_folders_do_not_import_the_front_ends(folder):
    """Neither the sandbox nor the checks import the pipeline's front ends or the release tools."""
    front = (
        "autograder.cli",
        "autograder.course.batch",
        "autograder.grade",
        "autograder.release",
        "autograder.nbgrader_path",
    )
    for path in sorted((PACKAGE / folder).rglob("*.py")):
        reaching = {name for name in ours(path) if name.startswith(front)}
        assert not reaching, f"{where(path)} imports {sorted(reaching)}"


def _module_graph() -> dict[str, set[str]]:
    """autograder's modules -> the autograder modules each imports (a name imported from a module counts as the
    module; imports for type checking only count too)."""
    paths = {
        ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): path
        for path in PACKAGE.rglob("*.py")
    }
    graph = {}
    for module, path in paths.items():
        targets = set()
        for name in ours(path):
            while name and name not in paths:
                name = name.rpartition(".")[0]
            if name and name != module and not module.startswith(f"{name}."):  # a package's __init__ is not a use
                targets.add(name)
        graph[module] = targets
    return graph


def _circle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle in ``graph``, as the modules along it, or None."""
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module], _ = "open", path.append(module)
        for target in sorted(graph.get(module, ())):
            if state.get(target) == "open":
                return path[path.index(target) :] + [target]
            if target not in state and (found := visit(target)):
                return found
        state[module], _ = "done", path.pop()
        return None

    for module in sorted(graph):
        if module not in state and (found := visit(module)):
            return found
    return None


def test_no_import_circle():
    """No module of autograder imports, through others, itself (a type-checking import counts): each layer builds
    on the ones below it, and sentences are written at the edge, not in scoring."""
    found = _circle(_module_graph())
    assert found is None, " -> ".join(found)


def test_an_import_circle_is_found():
    """The search above finds a circle where there is one."""
    assert _circle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _circle({"a": {"b"}, "b": set()}) is None


def test_the_folder_table_names_every_flat_module_and_folder():
    """docs/architecture.md's table of folders matches the tree: each module flat in autograder/, each folder of it,
    and each module of course/, nbgrader_path/, sandbox/ and render/ is named there (a module moved or added
    without its row fails here)."""
    doc = (ROOT / "docs" / "architecture.md").read_text()
    table = doc.split("## The folders", 1)[1].split("\n## ", 1)[0]
    named = [
        f"`autograder/{path.relative_to(PACKAGE)}/`" for path in PACKAGE.rglob("*") if (path / "__init__.py").exists()
    ]
    for folder in ("", "course/", "nbgrader_path/", "sandbox/", "sandbox/student_side/", "render/"):
        named += [f"{path.name}`" for path in (PACKAGE / folder).glob("*.py") if path.name != "__init__.py"]
    missing = [name for name in named if name not in table]
    assert not missing, f"docs/architecture.md's table of folders does not name {missing}"
