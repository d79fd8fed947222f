"""The project's own tests: shared fixtures in tests/conftest.py, shared helpers in helper modules, and no test
module importing another."""

from __future__ import annotations

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
