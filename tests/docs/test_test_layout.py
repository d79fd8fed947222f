"""The project's own tests: one folder per feature, shared fixtures in conftest.py files (one ``graded``), shared
helpers in helper modules, and no test module importing another."""

from __future__ import annotations

import ast

from tests.helpers import ROOT, imports

TESTS = ROOT / "tests"


def _module(path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def test_no_test_module_imports_another():
    """A test module takes what it shares from tests/helpers.py (or another helper module) and tests/conftest.py,
    never from a test module: each test file can be read, moved and run on its own."""
    found = {
        _module(path): sorted(
            name
            for name in imports(path)
            if name.startswith("tests.") and name.split(".")[-1].startswith("test_") and name != _module(path)
        )
        for path in sorted([*TESTS.glob("*.py"), *TESTS.glob("*/test_*.py"), *TESTS.glob("*/conftest.py")])
    }
    assert {name: modules for name, modules in found.items() if modules} == {}


def test_no_test_file_is_named_by_when_it_was_written():
    """Test files are named by what they test: no wave, round or issue number in a name."""
    dated = [path.name for path in TESTS.glob("*/test_*.py") if any(word in path.stem for word in ("wave", "issue"))]
    assert dated == []


def test_every_test_file_is_in_a_feature_folder():
    """tests/ holds helpers, fixtures and data; each test file is in the folder of the feature it tests."""
    assert [path.name for path in TESTS.glob("test_*.py")] == []


def _fixtures(path) -> set[str]:
    """The names of the fixtures ``path`` defines (functions decorated with pytest.fixture, called or not)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.FunctionDef):
            for decorator in node.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                if isinstance(target, ast.Attribute) and target.attr == "fixture":
                    found.add(node.name)
    return found


def test_one_graded_fixture():
    """What a module grades, graded once for it, is the one ``graded`` fixture of tests/conftest.py, told what to grade
    by the module's ``GRADED`` (tests/graded.py): no module or folder defines another."""
    paths = [*TESTS.glob("*/test_*.py"), *TESTS.glob("*/conftest.py"), *TESTS.glob("*.py")]
    assert sorted(str(path.relative_to(TESTS)) for path in paths if "graded" in _fixtures(path)) == ["conftest.py"]
