"""The trusted side's readers fed random and adversarial bytes: notebooks and their answers, folder names, submission
times (nbgrader's timestamps, --times, Gradescope's metadata), results files and the instructor's decisions. Each
gives a grade, a value or a clear refusal (its own error type), never another exception. Seeded and bounded in time."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest

from autograder.assignment.deadline import DeadlineError, gradescope_time, parse, parse_nbgrader_timestamp, read_times
from autograder.config import load_settings
from autograder.course import decisions
from autograder.course.class_results import class_results
from autograder.course.roster import page_names, result_names
from autograder.read.handed_in import listing
from autograder.record import Result
from autograder.render.inert import inert, shown
from autograder.report import load
from tests.helpers import ROOT

SETTINGS = load_settings(environ={})
NOTEBOOK = (ROOT / "assignments" / "source" / "sdpa" / "sdpa.ipynb").read_bytes()
PIECES = [b"{", b"}", b"[", b"]", b'"', b"\\", b",", b":", b"null", b"1e999", b"-", b"\x00", b"\xff", b"\xed\xa0\x80",
          "\u212a".encode(), b"\n", b"\r", b"cells", b"source", b"nbgrader", b"q_variance = ", b"0" * 40]  # fmt: skip


def _noise(draw: random.Random, most: int = 300) -> bytes:
    return b"".join(draw.choice(PIECES) for _ in range(draw.randrange(0, most)))


def _mutants(draw: random.Random, base: bytes, count: int):
    """``base`` cut, flipped, spliced with noise, nested deep: ``count`` variants."""
    for _ in range(count):
        kind = draw.randrange(5)
        at = draw.randrange(len(base) + 1)
        if kind == 0:
            yield base[:at]
        elif kind == 1:
            flipped = bytearray(base)
            for _ in range(draw.randrange(1, 20)):
                flipped[draw.randrange(len(flipped))] = draw.randrange(256)
            yield bytes(flipped)
        elif kind == 2:
            yield base[:at] + _noise(draw) + base[at:]
        elif kind == 3:
            depth = draw.choice([10, 1000, 100_000])
            yield base[:at] + b"[" * depth + base[at:]
        else:
            yield _noise(draw, 2000)


@pytest.mark.timeout(120)
def test_notebooks_and_their_answers_from_random_bytes_are_graded_or_refused(tmp_path):
    """A notebook cut, flipped, spliced or nested past the parser: the read stage makes it source or an ungradable
    reason, and the knowledge check scores what it reads, never an exception out of the trusted reader."""
    from autograder.grade import Grading, knowledge_check, read

    draw = random.Random(55)
    path = tmp_path / "sdpa.ipynb"
    outcomes = {"source": 0, "ungradable": 0}
    for number, data in enumerate(_mutants(draw, NOTEBOOK, 60)):
        path.write_bytes(data)
        work = tmp_path / f"work{number}"
        work.mkdir()
        grading = Grading(path, SETTINGS)
        grading.folder = work  # as grade() gives each grading its own folder
        grading = read(grading)
        assert grading.source is not None or grading.ungradable, number
        outcomes["source" if grading.source is not None else "ungradable"] += 1
        scored = knowledge_check(grading).questions
        assert scored and all(isinstance(test.get("output"), str) for test in scored), number
    assert outcomes["source"] and outcomes["ungradable"], outcomes  # both kinds met: the mutants reach both ends


@pytest.mark.timeout(60)
def test_submission_times_from_random_bytes_are_a_time_or_a_refusal(tmp_path):
    """nbgrader's timestamp.txt (a time or None), --times (the times or DeadlineError naming the row) and Gradescope's
    metadata (a time, or none with the settings' deadline)."""
    draw = random.Random(56)
    deadline = parse({"due": "2026-12-01T23:59:00+00:00", "policy": "per_day", "percent": 10}, "course.toml")
    times, metadata = tmp_path / "times.csv", tmp_path / "submission_metadata.json"
    good = b"student,submitted_at\nalice,2026-12-01T20:00:00+00:00\n"
    meta = json.dumps({"created_at": "2026-12-02T01:00:00.0+00:00", "users": [{"email": "a@b.c"}],
                       "assignment": {"due_date": "2026-12-01T23:59:00.0+00:00"}}).encode()  # fmt: skip
    for data in _mutants(draw, good, 150):
        text = data.decode("utf-8", errors="replace")
        found = parse_nbgrader_timestamp(text)
        assert found is None or found.tzinfo is not None
        times.write_bytes(data)
        try:
            read_times(times)
        except DeadlineError as error:
            assert f"--times {times}" in str(error)
    for data in _mutants(draw, meta, 150):
        metadata.write_bytes(data)
        student, submitted, used = gradescope_time(metadata, deadline)
        assert isinstance(student, str) and (submitted is None or submitted.tzinfo is not None) and used is not None


@pytest.mark.timeout(60)
def test_folder_names_from_random_bytes_are_listed_named_and_shown(tmp_path):
    """Folder names of any bytes the file system takes (not UTF-8, controls, a Kelvin sign, 255 bytes): the class is
    listed, every student gets one result file and one page of their own, and every name is shown printable."""
    draw = random.Random(57)
    folder = tmp_path / "class"
    folder.mkdir()
    made = set()
    for _ in range(80):
        name = bytes(draw.choice([draw.randrange(1, 256), *b"aZ_.-"]) for _ in range(draw.randrange(1, 255)))
        name = name.replace(b"/", b"x")
        if name in (b".", b"..") or name in made:
            continue
        try:
            os.mkdir(os.fsencode(folder) + b"/" + name)
        except OSError:
            continue
        made.add(name)
    names = list(listing(folder, SETTINGS.limits).students)
    files, pages = result_names(names), page_names(names)
    assert len(set(files.values())) == len(names) == len(set(pages.values()))
    assert all(len(os.fsencode(file)) <= 255 and "/" not in file for file in files.values())
    for name in names:
        said = shown(name)
        said.encode("utf-8")  # printable: no lone surrogate reaches a page, a CSV or the terminal
        assert "\n" not in inert(said, keep_newlines=False)


@pytest.mark.timeout(60)
def test_results_and_decisions_files_from_random_bytes_are_read_or_refused(tmp_path):
    """A results file of any bytes (cut, nested past the parser, another JSON) is read as a result or as the grader's
    failure on it, and the class is counted; decisions.jsonl of any bytes is read or refused by name."""
    draw = random.Random(58)
    base = json.dumps(
        {
            "score": 40.0,
            "max_score": 55.0,
            "output": "",
            "tests": [{"name": "a", "score": 1, "max_score": 1, "extra_data": {"flag": "x"}}],
            "extra_data": {"record": {"held": "r"}},
        }
    ).encode()
    decision = json.dumps({"verb": "override", "student": "ann", "at": "2026", "score": 3}).encode() + b"\n"
    path = tmp_path / "ann.json"
    results = {}
    for number, data in enumerate(_mutants(draw, base, 150)):
        path.write_bytes(data)
        result = load(path)
        assert isinstance(result, dict)
        record = Result.of(result)
        assert isinstance(record.held, str) and isinstance(record.raw_score, float)
        results[f"s{number}"] = result
    class_results(results)
    for data in _mutants(draw, decision, 150):
        (tmp_path / decisions.DECISIONS).write_bytes(data)
        try:
            found = decisions.read(tmp_path)
        except decisions.DecisionsError as error:
            assert decisions.DECISIONS in str(error)
        else:
            for item in found:
                decisions.settle(json.loads(base), "ann", [item])


def test_the_fuzzed_readers_are_the_trusted_ones():
    """The readers fed here are the ones every path uses (a rename that left one behind would fuzz nothing)."""
    from autograder.grade import STAGES, read

    assert read in STAGES and Path(decisions.__file__).name == "decisions.py"
