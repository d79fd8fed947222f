"""The gate (autograder/read/handed_in.py): what a student hands in is read once, bounded, in linear time, into one
record; what is not a regular file is refused there, for that student alone."""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path

import pytest

from autograder.assignment.deadline import parse_nbgrader_timestamp
from autograder.config import load_settings
from autograder.course import similarity
from autograder.read import bounded
from autograder.read.handed_in import MARKER, UNTRUSTED, collected_by_nbgrader, listing, take, with_time
from autograder.sandbox.student_side import wire
from tests.helpers import python_steps
from tests.reading.common import put

LIMITS = load_settings(environ={}).limits


def _refused_or(function, text):
    """The reader's answer, or its refusal (a bound crossed is an answer too: it must come as fast)."""
    try:
        return function(text)
    except ValueError as refused:
        return refused


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
    "similarity's tokens, brackets nested deep": (
        lambda text: _refused_or(similarity.normalised, text),
        lambda n: "x = " + "(" * (n // 2) + ")" * (n // 2) + "\n",
    ),
    "similarity's tokens, one string of escaped quotes": (
        lambda text: _refused_or(similarity.normalised, text),
        lambda n: 'x = "' + '\\"' * (n // 2) + '"\n',
    ),
    "similarity's tokens, names tokenize splits": (
        lambda text: _refused_or(similarity.normalised, text),
        lambda n: "a·b = 1\n" * (n // 8),
    ),
    "nbgrader timestamp, digits and spaces": (
        parse_nbgrader_timestamp,
        lambda n: "2026-12-01 00:00:00" + " " * n + "x",
    ),
}


@pytest.mark.parametrize("reader", sorted(READERS))
def test_each_trusted_reader_runs_in_linear_time(reader):
    """Eight times the input costs at most about eight times the steps (a quadratic reader: 64), counted, not timed:
    a loaded machine once made 8x the input take 29.7x the time of a linear reader."""
    function, make = READERS[reader]
    small, large = 1 << 12, 1 << 15
    ratio = python_steps(function, make(large)) / max(python_steps(function, make(small)), 1)
    assert ratio < 10, f"{reader}: 8x the input took {ratio:.1f}x the steps"


def test_the_step_count_sees_a_quadratic_reader():
    """The measure above fails a reader that rescans the text before each bracket (64x the steps for 8x the input)."""

    def rescanning(text: str) -> int:
        depth = 0
        for at in range(0, len(text), 64):
            depth = max(depth, sum(1 for c in text[:at] if c in "[{"))
        return depth

    ratio = python_steps(rescanning, "[" * (1 << 11)) / python_steps(rescanning, "[" * (1 << 8))
    assert ratio > 40, ratio


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


def _class(tmp_path, files: dict[str, str]) -> Path:
    """A class folder holding ``files``."""
    return put(tmp_path / "class", files)


def test_every_entry_of_a_class_folder_is_accounted_for(tmp_path):
    """Each entry is a student or skipped with its reason; nothing vanishes without a word."""
    folder = _class(tmp_path, {
        "alice/attention.py": "x = 1\n", "bob.py": "x = 1\n", "notes.txt": "hi\n", ".DS_Store": "",
        "old-grades/alice.json": "{}", f"old-grades/{MARKER}": "",
    })  # fmt: skip
    found = listing(folder, LIMITS)
    assert sorted(found.students) == ["alice", "bob"]
    assert found.skipped == {
        ".DS_Store": "a hidden entry (its name starts with '.')",
        "notes.txt": "neither a folder, a .py file nor a notebook (.ipynb)",
        "old-grades": "written by sdpa-grade (results or feedback pages; it holds no submission)",
    }
    entries = [path.name for given in found.students.values() for path in (given if isinstance(given, tuple) else
                                                                            (given,))]  # fmt: skip
    assert sorted([*entries, *found.skipped]) == sorted(path.name for path in folder.iterdir())


def test_a_file_named_like_the_batchs_marker_does_not_hide_a_student(tmp_path):
    """A student whose upload holds the batch's output marker is still a student (their folder holds a submission)."""
    folder = _class(tmp_path, {"mallory/attention.py": "x = 1\n", f"mallory/{MARKER}": "", "alice.py": "x = 1\n"})
    found = listing(folder, LIMITS)
    assert sorted(found.students) == ["alice", "mallory"] and found.skipped == {}


def test_a_name_that_differs_only_in_case_is_a_candidate_and_flags_the_student(tmp_path):
    """Attention.py beside attention.py (one file on a Mac or Windows disk): both candidates, the exact name graded;
    a fullwidth-letter copy of the name is one too (NFKC)."""
    folder = _class(tmp_path, {"bob/attention.py": "x = 1\n", "bob/Attention.py": "x = 2\n", "bob/ａttention.py": "3"})
    handed = take(folder / "bob", LIMITS)
    assert handed.relative == "attention.py" and handed.data == b"x = 1\n"
    assert set(handed.choice.others) == {"Attention.py", "ａttention.py"}
    alone = _class(tmp_path / "b", {"carol/ATTENTION.PY": "x = 4\n"})
    assert take(alone / "carol", LIMITS).data == b"x = 4\n"


NOW = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)


def test_a_time_file_in_the_students_own_upload_is_not_believed(tmp_path):
    """In a plain class folder (an LMS download) a student's own timestamp.txt gives no time: flagged, with why."""
    folder = _class(tmp_path, {"late/attention.py": "x = 1\n", "late/timestamp.txt": "2026-11-01 00:00:00 UTC"})
    handed = with_time(take(folder / "late", LIMITS), "late", {}, collected_by_nbgrader(folder))
    assert handed.submitted_at is None and handed.time_problem == UNTRUSTED
    timed = with_time(take(folder / "late", LIMITS), "late", {"late": NOW}, False)
    assert (timed.submitted_at, timed.time_from) == (NOW, "--times")


def _collected(tmp_path, stamps: dict[str, str]) -> Path:
    course = tmp_path / "course"
    (course / "submitted").mkdir(parents=True)
    (course / "nbgrader_config.py").write_text("c = get_config()\n")
    for student, stamp in stamps.items():
        put(course / "submitted" / student, {"sdpa/sdpa.ipynb": "{}", "sdpa/timestamp.txt": stamp})
    return course / "submitted"


def test_nbgraders_collected_timestamp_is_the_time_and_a_bad_one_flags_that_student_alone(tmp_path):
    """submitted/<student>/sdpa/timestamp.txt in an nbgrader course is nbgrader's: believed; one that cannot be
    used (an offset out of range, a FIFO) gives that student no time, the others theirs."""
    folder = _collected(tmp_path, {"ok": "2026-12-01 12:00:00.000000 UTC", "bad": "2026-12-01 12:00:00 +9900"})
    put(folder / "pipe", {"sdpa/sdpa.ipynb": "{}"})
    os.mkfifo(folder / "pipe" / "sdpa" / "timestamp.txt")
    assert collected_by_nbgrader(folder)
    students = listing(folder, LIMITS).students

    def timed(name):
        return with_time(take(students[name], LIMITS), name, {}, True)

    assert (timed("ok").submitted_at, timed("ok").time_from) == (NOW, "nbgrader's timestamp.txt")
    assert timed("bad").submitted_at is None
    assert timed("bad").time_problem == (
        "no trusted submission time: nbgrader's timestamp.txt holds no time the grader can use"
    )
    assert "not a regular file (a named pipe)" in timed("pipe").time_problem


def test_a_py_and_a_notebook_of_one_name_get_a_time_problem_not_a_crash(tmp_path):
    """both.py + both.ipynb at the top of an nbgrader submitted/ folder: one student, no time, no AttributeError."""
    folder = put(_collected(tmp_path, {}), {"both.py": "x = 1\n", "both.ipynb": "{}"})
    students = listing(folder, LIMITS).students
    handed = with_time(take(students["both"], LIMITS), "both", {}, True)
    assert handed.submitted_at is None and handed.time_problem.startswith("no trusted submission time")


def test_a_marker_beside_a_submission_too_deep_to_find_does_not_hide_the_student(tmp_path):
    """A marker and an attention.py past limits.folder_depth: the student is ungradable (the bound named), not
    skipped as the batch's output."""
    deep = "/".join(f"d{i}" for i in range(LIMITS.folder_depth + 2))
    folder = _class(tmp_path, {f"mallory/{MARKER}": "", f"mallory/{deep}/attention.py": "x = 1\n"})
    found = listing(folder, LIMITS)
    assert list(found.students) == ["mallory"] and found.skipped == {}
    assert "limits.folder_depth" in take(found.students["mallory"], LIMITS).refused


def test_a_time_from_another_assignments_folder_is_not_taken(tmp_path):
    """submitted/bob/aaa/attention.py (an earlier collected assignment) ranked before bob's late sdpa/: graded, but
    aaa's timestamp is another submission's time: no trusted time for this assignment, flagged."""
    folder = _collected(tmp_path, {"bob": "2026-12-03 10:00:00.000000 UTC"})
    put(folder / "bob", {"aaa/attention.py": "x = 1\n", "aaa/timestamp.txt": "2026-11-20 10:00:00.000000 UTC"})
    handed = with_time(take(folder / "bob", LIMITS), "bob", {}, True)
    assert handed.relative == "aaa/attention.py" and handed.submitted_at is None
    assert "not in nbgrader's <student>/sdpa/ folder" in handed.time_problem
