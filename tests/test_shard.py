"""`--shard K/N`: a stable, even split of a class by name; shards graded apart merge into one batch's results."""

from __future__ import annotations

import argparse
import csv
import json
import subprocess

import pytest

from autograder.shard import parse_shard, select, shard_of
from tests.helpers import BIN, REFERENCE, SUBMISSIONS, run

CLASS = {  # student -> submission: honest, wrong, hostile and ungradable ones
    "ada": "correct", "bo": "correct", "chen": "mistake_divide_by_dk", "dev": "mistake_no_scale",
    "eun": "mistake_mask_inverted", "femi": "fake_results", "gus": "syntax_error", "hana": "correct",
}


def test_parse_shard_accepts_k_of_n_from_zero():
    """'2/4' is shard 2 of 4; K counts from 0, as Slurm array and Kubernetes indices do."""
    assert parse_shard("0/1") == (0, 1) and parse_shard("2/4") == (2, 4)


@pytest.mark.parametrize("text", ["4/4", "-1/4", "1/0", "1", "a/b", "1/2/3", ""])
def test_parse_shard_rejects_what_is_not_k_of_n(text):
    """A shard outside 0..N-1, or not K/N at all, is refused with the value named."""
    with pytest.raises(argparse.ArgumentTypeError, match="Invalid --shard"):
        parse_shard(text)


def test_shards_partition_the_class_evenly():
    """Every student lands in exactly one shard, and 1,000 names split about evenly over 8 shards."""
    names = [f"student{i:04d}" for i in range(1000)]
    roster = {name: None for name in names}
    parts = [select(roster, (k, 8)) for k in range(8)]
    assert sorted(name for part in parts for name in part) == sorted(names)
    assert all(95 <= len(part) <= 155 for part in parts), [len(part) for part in parts]  # 125 expected


def test_adding_students_moves_nobody():
    """A student's shard depends on their name alone: new students never reshuffle the graded ones."""
    before = {name: shard_of(name, 5) for name in ("ada", "bo", "chen", "dev")}
    roster = {name: None for name in [*before, "zoe", "yusuf", "xi"]}
    for k in range(5):
        assert {name for name in select(roster, (k, 5)) if name in before} == {n for n, s in before.items() if s == k}


def test_shard_is_the_same_in_every_process():
    """The hash is not Python's salted hash(): another interpreter, another PYTHONHASHSEED, the same shards."""
    code = "from autograder.shard import shard_of; print([shard_of(n, 7) for n in ('ada', 'bo', 'chen', 'dev')])"
    outputs = {run([str(BIN / "python"), "-c", code], env={"PYTHONHASHSEED": seed}).stdout for seed in ("1", "2")}
    assert outputs == {str([shard_of(n, 7) for n in ("ada", "bo", "chen", "dev")]) + "\n"}


def write_class(folder):
    folder.mkdir()
    for student, name in CLASS.items():
        (folder / student).mkdir()
        overlay = SUBMISSIONS / "overlays" / f"{name}.py"
        text = (REFERENCE.read_text() + ("\n" + overlay.read_text() if overlay.is_file() else "")
                if name == "correct" or overlay.is_file() else (SUBMISSIONS / "standalone" / f"{name}.py").read_text())
        (folder / student / "attention.py").write_text(text)
    return folder


def outcomes(out) -> dict[str, tuple]:
    """Per student: the total, and every check's score out of its maximum (not timings: each run has its own seed)."""
    found = {}
    for path in sorted(out.glob("*.json")):
        result = json.loads(path.read_text())
        checks = tuple(sorted((t["name"], t["score"], t["max_score"]) for t in result["tests"]))
        found[path.stem] = (result["score"], result.get("ungradable", ""), checks)
    return found


@pytest.mark.slow
def test_three_shards_merge_into_one_batch(tmp_path):
    """3 shards graded by separate processes into one folder, then merged, equal one unsharded batch."""
    students = write_class(tmp_path / "submitted")
    assert all(select(CLASS, (k, 3)) for k in range(3)), "each shard should grade someone"
    whole = run([str(BIN / "sdpa-grade"), "--batch", str(students), "--json-dir", str(tmp_path / "whole"),
                 "--csv", str(tmp_path / "whole.csv"), "--jobs", "2"])
    assert whole.returncode == 0, whole.stderr

    shared = tmp_path / "shared"
    command = [str(BIN / "sdpa-grade"), "--batch", str(students), "--json-dir", str(shared), "--jobs", "1"]
    shards = [subprocess.Popen([*command, "--shard", f"{k}/3"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
              for k in range(3)]
    finished = [(shard.wait(timeout=600), *shard.communicate()) for shard in shards]
    assert all(code == 0 for code, _, _ in finished), finished
    counts = [int(err.split("students,")[0].split()[-1]) for _, _, err in finished]  # "shard k/3: M students, ..."
    assert sum(counts) == len(CLASS) and all(counts), counts

    merged = run([str(BIN / "sdpa-grade"), "--batch", str(students), "--json-dir", str(shared),
                  "--summary-only", "--csv", str(tmp_path / "merged.csv")])
    assert merged.returncode == 0, merged.stderr
    assert f"Class summary: {len(CLASS)} submissions" in merged.stdout
    assert outcomes(shared) == outcomes(tmp_path / "whole")
    assert outcomes(shared)["ada"][0] == 55 and outcomes(shared)["chen"][0] < 55  # a real grading, not all zeros
    with open(tmp_path / "merged.csv") as merged_csv, open(tmp_path / "whole.csv") as whole_csv:
        assert list(csv.reader(merged_csv)) == list(csv.reader(whole_csv))
    def summary_without_times(text: str) -> str:  # grading times differ from run to run; everything else may not
        return "\n".join(line for line in text.splitlines() if not line.startswith("Grading time per submission"))

    assert summary_without_times(merged.stdout) == summary_without_times(whole.stdout)  # the same class summary


def test_summary_only_names_students_without_a_result(tmp_path):
    """--summary-only grades nothing; students with no result yet are named, and the exit code is 1."""
    students = write_class(tmp_path / "submitted")
    empty = tmp_path / "empty"
    result = run([str(BIN / "sdpa-grade"), "--batch", str(students), "--json-dir", str(empty), "--summary-only"])
    assert result.returncode == 1
    assert f"{len(CLASS)} of {len(CLASS)} students have no result yet: ada, bo" in result.stderr
    assert not list(empty.glob("*.json"))
