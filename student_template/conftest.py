"""Keeps the report short: one line per failing test, then the function to work on next: the first, in the
order the functions are written, that is still a stub or whose tests fail."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

# --- written by sdpa-build from the reference: the functions in order, and what each builds on ---
ORDER = [
    "attention_scores",
    "scale_scores",
    "causal_mask",
    "padding_mask",
    "masked_softmax",
    "attention_output",
    "scaled_dot_product_attention",
    "MultiHeadAttention",
    "dot_product_variance",
]
BUILDS_ON = {
    "scaled_dot_product_attention": ("attention_scores", "scale_scores", "causal_mask", "masked_softmax", "attention_output"),
    "MultiHeadAttention": ("scaled_dot_product_attention",),
}
# --- end of what sdpa-build writes ---
_missing: list[str] = []  # functions still a stub (their NotImplementedError)
_failing: list[str] = []  # functions whose own tests fail for another reason
_unreadable: list[str] = []  # where Python cannot read attention.py: "attention.py, line N: what Python said"


class _OneLine:
    """A failure report that prints as a single line in ``--tb=line`` mode."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.reprcrash = self

    def __str__(self) -> str:
        return self.text

    def toterminal(self, out) -> None:
        """Print nothing here: pytest prints the crash line, which is ``self.text``."""


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    if call.excinfo is None:
        return
    one_line = item.config.option.tbstyle == "line"
    if call.excinfo.errisinstance(NotImplementedError):
        message = str(call.excinfo.value)
        _missing.append(message.split(" ")[0].split(".")[0])
        if one_line:
            outcome.get_result().longrepr = _OneLine(f"{item.name}: {message} (see the TODO in attention.py)")
        return
    _failing.append(_function_of(item))
    if one_line:  # a real failure: the test's name, what went wrong, and the test's own line
        outcome.get_result().longrepr = _OneLine(f"{item.name} failed: {_first_line(call.excinfo)} ({_test_line(item, call.excinfo)})")


def pytest_collectreport(report):
    """A test file that cannot import attention.py because Python cannot read it (a SyntaxError, an IndentationError):
    one line, the file's line and what Python said, instead of pytest's traceback."""
    if not report.failed or _unreadable:
        return
    path = Path(__file__).with_name("attention.py")
    try:
        compile(path.read_bytes(), str(path), "exec", dont_inherit=True)
    except SyntaxError as error:
        said = f"{type(error).__name__}: {error.msg}"
        _unreadable.append(f"attention.py, line {error.lineno}: {said}")
        report.longrepr = f"{_unreadable[0]} (Python cannot read the file, so no test can import it)"
    except (OSError, ValueError):
        return


def _function_of(item) -> str:
    """The function a test is about: the longest of ORDER that its name starts with (test_scale_scores_...)."""
    name = getattr(item, "originalname", item.name).removeprefix("test_")
    found = [function for function in ORDER if name == function or name.startswith(function + "_")]
    return max(found, key=len, default="")


def _first_line(excinfo) -> str:
    """The exception's message on one line; for an AssertionError, without its type."""
    message = str(excinfo.value).strip().splitlines()[0] if str(excinfo.value).strip() else ""
    if excinfo.errisinstance(AssertionError):
        return message or "assertion failed"
    return f"{excinfo.typename}: {message}" if message else excinfo.typename


def _test_line(item, excinfo) -> str:
    """file:line of the failing line in the test itself, not in a helper it called."""
    name = getattr(item, "originalname", item.name)
    for entry in reversed(excinfo.traceback):
        if entry.frame.code.name == name:
            return f"{entry.path.name}:{entry.lineno + 1}"
    return item.location[0]


def _stubs() -> set[str]:
    """The functions of attention.py still a stub (they raise the template's NotImplementedError), read from its
    source: a function that no public test covers is still named."""
    try:
        tree = ast.parse(Path(__file__).with_name("attention.py").read_text())
    except (OSError, SyntaxError, ValueError):
        return set()
    stubs = set()
    for node in tree.body:
        for inner in ast.walk(node):
            raised = getattr(inner, "exc", None) if isinstance(inner, ast.Raise) else None
            said = raised.args[0] if isinstance(raised, ast.Call) and raised.args else None
            if isinstance(said, ast.Constant) and str(said.value).endswith(" is not implemented yet"):
                stubs.add(getattr(node, "name", ""))
    return stubs


def pytest_terminal_summary(terminalreporter):
    if _unreadable:
        terminalreporter.write_line(f"Next: fix {_unreadable[0]}")
        return
    _missing.extend(_stubs())
    pending = [name for name in ORDER if name in _missing or name in _failing]
    if not pending:
        return
    first = pending[0]
    # a stub, or a function whose own tests fail: not one whose tests fail where it builds on one still to fix or write
    left = sum(name in _missing or not any(part in pending for part in BUILDS_ON.get(name, ())) for name in pending)
    if first in _missing:
        still = "still to write or fix" if any(name in _failing for name in pending) else "still to write"
        terminalreporter.write_line(f"Next: implement {first} in attention.py ({left} function(s) {still})")
    else:
        terminalreporter.write_line(
            f"Next: fix {first} in attention.py: its tests above fail ({left} function(s) still to fix or write)"
        )
