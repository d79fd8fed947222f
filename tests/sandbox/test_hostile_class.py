"""A class folder holding every attack on the gate at once, beside honest students, graded in one `sdpa-grade batch
--jobs 2 --similarity --csv` run: the honest grades are their grades alone, every hostile entry is graded or flagged
with its reason, every entry of the folder is accounted for, and the CSV and the summary are written. (That no entry
stalls the batch is the gate's: its readers are counted linear in tests/reading/test_gate.py, a named pipe is refused
without waiting there too; this test's time-out bounds the whole run.)"""

from __future__ import annotations

import csv
import json
import os

import pytest

from autograder.read.handed_in import MARKER, UNTRUSTED
from tests.helpers import BIN, REFERENCE, ROOT, run

pytestmark = pytest.mark.slow

BOB = (ROOT / "examples" / "class" / "bob.py").read_text()
HONEST = {"alice": REFERENCE.read_text(), "bob": BOB}
CONFIG = '[deadline]\ndue = "2026-12-01T23:59:00+00:00"\npolicy = "zero"\n'
TIMES = "student,submitted_at\nalice,2026-12-01T10:00:00+00:00\nbob,2026-12-01T11:00:00+00:00\n"


def _write(folder, files: dict[str, str]) -> None:
    for relative, text in files.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _hostile(folder) -> None:
    """Every attack on what a student hands in, each a student (or an entry) of the class."""
    _write(folder, {
        # a late student's own time file, in a plain (LMS) class folder: no trusted time
        "late/attention.py": REFERENCE.read_text(), "late/timestamp.txt": "2026-11-01 00:00:00.000000 UTC",
        # a notebook of one unterminated run of escaped quotes (512 KiB): quadratic for a backtracking reader
        "quotes/sdpa.ipynb": '{"cells": ["' + '\\"' * (256 << 10),
        # the batch's own output marker in a student's upload
        f"marker/{MARKER}": "", "marker/attention.py": REFERENCE.read_text(),
        # two files that are one on a Mac or Windows disk: flagged, the exact name graded
        "case/attention.py": REFERENCE.read_text(), "case/Attention.py": BOB,
        # a .py and a notebook of one name at the top: one student
        "both.py": REFERENCE.read_text(), "both.ipynb": '{"cells": []}',
        # not a student: accounted for as skipped
        "notes.txt": "the TA's notes\n",
    })  # fmt: skip
    (folder / "pipe").mkdir()
    os.mkfifo(folder / "pipe" / "attention.py")  # a named pipe where the graded file would be


def _batch(folder, out, tmp_path):
    (tmp_path / "late.toml").write_text(CONFIG)
    (tmp_path / "times.csv").write_text(TIMES)
    args = [str(BIN / "sdpa-grade"), "batch", str(folder), "--jobs", "2", "--json-dir", str(out)]
    args += ["--similarity", "--csv", str(out / "grades.csv"), "--config", str(tmp_path / "late.toml")]
    args += ["--times", str(tmp_path / "times.csv")]
    return run(args, timeout=900)


def _rows(path) -> dict[str, dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return {row["student"]: row for row in csv.DictReader(handle)}


@pytest.mark.timeout(120)
def test_a_class_of_every_attack_is_graded_whole(tmp_path):
    """Honest grades unchanged (as graded alone), each hostile entry graded or flagged with why, every entry named."""
    honest = tmp_path / "honest"
    _write(honest, {f"{name}.py": text for name, text in HONEST.items()})
    alone = _batch(honest, tmp_path / "honest-grades", tmp_path)
    assert alone.returncode == 0, alone.stderr
    alone_rows = _rows(tmp_path / "honest-grades" / "grades.csv")

    hostile = tmp_path / "class"
    _write(hostile, {f"{name}.py": text for name, text in HONEST.items()})
    _hostile(hostile)
    done = _batch(hostile, tmp_path / "grades", tmp_path)
    assert done.returncode == 0, done.stderr
    rows = _rows(tmp_path / "grades" / "grades.csv")
    assert sorted(rows) == ["alice", "bob", "both", "case", "late", "marker", "pipe", "quotes"]
    for name in HONEST:
        assert rows[name]["score"] == alone_rows[name]["score"], name
    results = {name: json.loads((tmp_path / "grades" / f"{name}.json").read_text()) for name in rows}
    full = float(rows["alice"]["score"])  # the reference's: its knowledge check not handed in
    # graded: the reference's grade, each flagged where it must be (a flag that needs review holds the grade of record
    # out of the CSV until the instructor clears it: [record] hold_flagged)
    assert results["late"]["score"] == full and results["late"]["extra_data"]["late"]["time_problem"] == UNTRUSTED
    assert (rows["late"]["score"], rows["late"]["status"]) == ("", "held")
    assert results["marker"]["score"] == full and rows["marker"]["status"] == "held"  # no time: held, as late is
    assert results["case"]["extra_data"]["candidates"] == ["attention.py", "Attention.py"]
    assert results["case"]["score"] == full
    assert results["both"]["extra_data"]["candidates"] == ["both.py", "both.ipynb"]
    # refused at the gate, for themselves alone, with the reason
    assert rows["pipe"]["status"] == rows["quotes"]["status"] == "held"  # ungradable: held for review
    assert "not a regular file (a named pipe)" in results["pipe"]["ungradable"]
    assert "is not valid .ipynb JSON" in results["quotes"]["ungradable"]
    # the summary names every flag and every entry that is no student; similarity was written
    summary = done.stdout
    assert f"   late: a deadline is set and {UNTRUSTED}: no late penalty applied" in summary.splitlines()
    assert "Not graded as students (1 entry of the class folder):\n   notes.txt: neither a folder" in summary
    assert (tmp_path / "grades" / "similarity.csv").is_file()
