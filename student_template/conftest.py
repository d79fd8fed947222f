"""Keeps the report short: one line per failing test, then the function to write next."""

from __future__ import annotations

import pytest

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
_missing: list[str] = []


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
    elif one_line:  # a real failure: the test's name, what went wrong, and the test's own line
        outcome.get_result().longrepr = _OneLine(f"{item.name} failed: {_first_line(call.excinfo)} ({_test_line(item, call.excinfo)})")


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


def pytest_terminal_summary(terminalreporter):
    pending = [name for name in ORDER if name in _missing]
    if pending:
        terminalreporter.write_line(
            f"Next: implement {pending[0]} in attention.py ({len(pending)} function(s) still to write)"
        )
