"""The gate (autograder/handed_in.py): what a student hands in is read once, bounded, in linear time, into one record;
what is not a regular file is refused there, for that student alone."""

from __future__ import annotations

import os
import time

import pytest

from autograder import bounded
from autograder.config import load_settings
from autograder.course.deadline import parse_nbgrader_timestamp
from autograder.handed_in import take
from autograder.sandbox.student_side import wire

LIMITS = load_settings(environ={}).limits


def _seconds(function, text) -> float:
    """The least of three runs: the machine's neighbours only ever add time."""
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        function(text)
        best = min(best, time.perf_counter() - started)
    return best


# Each trusted reader of student text, with the adversarial inputs that make a backtracking pattern quadratic
READERS = {
    "notebook nesting, escaped quotes never closed": (
        lambda text: bounded.nesting(text, 64, 100_000),
        lambda n: '{"cells": ["' + '\\"' * (n // 2),
    ),
    "notebook nesting, quotes and backslashes": (
        lambda text: bounded.nesting(text, 64, 100_000),
        lambda n: '"\\' * (n // 2),
    ),
    "worker reply header, escaped quotes never closed": (
        wire.nesting,
        lambda n: b'{"body": "' + b'\\"' * (n // 2),
    ),
    "nbgrader timestamp, digits and spaces": (
        parse_nbgrader_timestamp,
        lambda n: "2026-12-01 00:00:00" + " " * n + "x",
    ),
}


@pytest.mark.parametrize("reader", sorted(READERS))
def test_each_trusted_reader_runs_in_linear_time(reader):
    """Eight times the input costs at most about eight times the time (a quadratic reader: 64), and 1 MiB well
    under a second of the grading budget."""
    function, make = READERS[reader]
    small, large = 1 << 17, 1 << 20
    function(make(small))  # warm: the pattern compiled, the code loaded
    ratio = _seconds(function, make(large)) / max(_seconds(function, make(small)), 1e-4)
    assert ratio < 24, f"{reader}: 8x the input took {ratio:.1f}x the time"
    assert _seconds(function, make(large)) < 2.0


def test_nesting_counts_brackets_outside_strings_only():
    """Brackets inside strings (escaped quotes and backslashes included) are not nesting; the rest is."""
    assert bounded.nesting('{"a": ["x\\"[[{", {"b": [1, [2]]}], "c": "\\\\"}', 64, 100) == (5, 5)
    assert bounded.nesting('[[["]"]]]', 64, 100) == (3, 3)
    assert wire.nesting(b'{"a": "\\\\", "b": [[1]]}') == 3


@pytest.mark.timeout(20)
def test_a_named_pipe_where_the_graded_file_would_be_is_refused_without_waiting(tmp_path):
    """A FIFO named attention.py: the gate does not open it for reading and wait; the student is ungradable."""
    folder = tmp_path / "mallory"
    folder.mkdir()
    os.mkfifo(folder / "attention.py")
    handed = take(folder, LIMITS)
    assert handed.data is None and not handed.missing
    assert handed.refused == "the file attention.py is not a regular file (a named pipe); submit the file itself"
    assert handed.relative == "attention.py"
