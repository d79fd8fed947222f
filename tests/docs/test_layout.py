"""The tree shows the trust boundary: imports between autograder's folders go one way only."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT, imports, ours

PACKAGE = ROOT / "autograder"


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
    from autograder.sandbox.zygote import _library_folder

    lib = _library_folder(tmp_path)
    copied = {path.name for path in lib.iterdir() if not path.is_symlink()}
    assert copied == {path.name for path in BESIDE_THE_STUDENT} - {"__init__.py"}
    assert "worker.py" in copied and "zygote.py" not in copied and "client.py" not in copied


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


# The layers, lowest first, each by its job: new code goes in the layer whose job it does (docs/architecture.md, "The
# layers"). A module imports only its own folder (or, flat, itself) and the layers below its own, never one beside it
# or above it. Imports inside functions and for type checking count.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("assignment/", "sandbox/", "status", "atomic", "interrupts", "quick_exit"),  # facts, mechanisms: stdlib, torch
    ("config",),  # a setting
    ("read/",),  # whatever opens what a student handed in
    ("provenance", "checks/"),  # what a grading knows: checks, inputs, questions; what made a grade
    ("record", "plugin"),  # results.json read back; the checks run under pytest
    ("scoring",),  # points
    ("render/",),  # words and pages, from fields handed in
    ("report", "release/"),  # files made for others: results.json; what students and Gradescope receive
    ("grade",),  # the pipeline's stages, in one list
    ("course/",),  # a verb (typed options, run_<verb>)
    ("nbgrader_path/",),  # another front end: nbgrader's, its export reading the course's record
    ("cli",),  # the command line: argparse stops here
)
LAYER_OF = {unit: number for number, units in enumerate(LAYERS) for unit in units}
MOST_FLAT_MODULES = 12


def unit_of(module: str) -> str:
    """The folder (``render/``) or flat module (``report``) an autograder module belongs to; "" for the package."""
    parts = module.split(".")
    if len(parts) < 2 or parts[0] != "autograder":
        return ""
    return f"{parts[1]}/" if (PACKAGE / parts[1]).is_dir() else parts[1]


def module_of(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def absolute_imports(path: Path) -> set[str]:
    """Every module ``path`` imports, at any depth, relative imports made absolute (``from . import x`` in
    autograder/render/html.py is autograder.render.x)."""
    found = set(imports(path))
    package = module_of(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = ".".join(package[: len(package) - node.level + 1])
            module = f"{base}.{node.module}" if node.module else base
            found |= {module} | {f"{module}.{alias.name}" for alias in node.names}
    return found


def crossings(path: Path) -> list[str]:
    """The imports of ``path`` that break the layers: each as 'unit imports unit'."""
    own = unit_of(module_of(path))
    found = []
    for name in sorted(absolute_imports(path)):
        target = unit_of(name)
        if target and target != own and not LAYER_OF[target] < LAYER_OF[own]:
            found.append(f"{own} imports {target} ({name})")
    return found


def test_the_layers_name_every_folder_and_flat_module_once():
    """Each folder and flat module of autograder/ is in exactly one layer, and each unit of the table exists."""
    units = [f"{path.name}/" for path in PACKAGE.iterdir() if (path / "__init__.py").exists()]
    units += [path.stem for path in PACKAGE.glob("*.py") if path.name != "__init__.py"]
    listed = [unit for layer in LAYERS for unit in layer]
    assert len(listed) == len(set(listed)), "a unit is in two layers"
    assert not set(units) - set(listed), f"in no layer: {sorted(set(units) - set(listed))}"
    assert not set(listed) - set(units), f"no such folder or module: {sorted(set(listed) - set(units))}"


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=where)
def test_every_import_follows_the_layers(path):
    """A module imports only its own folder and the layers below it (a folder's package ``__init__`` included)."""
    found = crossings(path)
    assert not found, f"{where(path)}: " + "; ".join(found)


def test_a_layer_crossing_is_found(tmp_path, monkeypatch):
    """The rule above finds an import upward or sideways where one is planted: at the top, inside a function, for
    type checking only, and relative; and lets a downward one through."""
    import tests.docs.test_layout as layout

    monkeypatch.setattr(layout, "ROOT", tmp_path)
    monkeypatch.setattr(layout, "PACKAGE", tmp_path / "autograder")
    for folder in ("render", "course", "read"):
        (tmp_path / "autograder" / folder).mkdir(parents=True)
        (tmp_path / "autograder" / folder / "__init__.py").write_text("")
    planted = tmp_path / "autograder" / "render" / "planted.py"
    planted.write_text(
        "from typing import TYPE_CHECKING\n"
        "from autograder.status import Status\n"  # below: allowed
        "from ..read import bounded\n"  # below, relative: allowed
        "if TYPE_CHECKING:\n"
        "    from autograder.course.batch import BatchOptions\n"
        "def page():\n"
        "    from autograder.report import load\n"
        "    from ..course import roster\n"
        "    import autograder.cli\n"
    )
    assert layout.crossings(planted) == [
        "render/ imports cli (autograder.cli)",
        "render/ imports course/ (autograder.course)",
        "render/ imports course/ (autograder.course.batch)",
        "render/ imports course/ (autograder.course.batch.BatchOptions)",
        "render/ imports course/ (autograder.course.roster)",
        "render/ imports report (autograder.report)",
        "render/ imports report (autograder.report.load)",
    ]
    beside = tmp_path / "autograder" / "read" / "beside.py"
    beside.write_text("from autograder.read import bounded\nfrom autograder.config import Limits\n")
    assert layout.crossings(beside) == []


def test_autograder_has_at_most_twelve_flat_modules():
    """autograder/ keeps its modules in folders by job: at most 12 sit flat beside them."""
    flat = sorted(path.name for path in PACKAGE.glob("*.py") if path.name != "__init__.py")
    assert len(flat) <= MOST_FLAT_MODULES, f"{len(flat)} flat modules: {flat}"


def test_the_architecture_doc_draws_the_layers_of_this_table():
    """docs/architecture.md's table of layers lists the layers above, lowest first, each with its units; the drawing
    above it numbers them alike, the top first."""
    doc = (ROOT / "docs" / "architecture.md").read_text()
    section = doc.split("## The layers", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[2] for line in section.splitlines() if line.startswith("| ") and line[2:3].isdigit()]
    drawn = [tuple(part.strip("` ") for part in row.split(",")) for row in rows]
    assert drawn == list(LAYERS)
    picture = section.split("```", 2)[1].splitlines()  # the drawing above the table: one line a layer, the top first
    lines = [re.split(r"\s{2,}", line.strip()) for line in picture if line.strip()[:1].isdigit()]
    named = [[word for word in words[1:] if re.fullmatch(r"[a-z_]+/?", word) and word in LAYER_OF] for words in lines]
    pictured = [(int(words[0]), tuple(units)) for words, units in zip(lines, named)]
    assert pictured == [(number, units) for number, units in reversed(list(enumerate(LAYERS)))]
