"""`--shard K/N`: a stable, even split of a class by name; shards graded apart merge into one batch's results."""

from __future__ import annotations

import csv
import json
import subprocess

import pytest

from autograder.course.shard import parse_shard, select, shard_of
from tests.helpers import BIN, CLASS, csv_rows, outcomes, run, total, write_class


def test_parse_shard_accepts_k_of_n_from_zero():
    """'2/4' is shard 2 of 4; K counts from 0, as Slurm array and Kubernetes indices do."""
    assert parse_shard("0/1") == (0, 1) and parse_shard("2/4") == (2, 4)


@pytest.mark.parametrize("text", ["4/4", "-1/4", "1/0", "1", "a/b", "1/2/3", ""])
def test_parse_shard_rejects_what_is_not_k_of_n(text):
    """A shard outside 0..N-1, or not K/N at all, is refused with the value named."""
    with pytest.raises(ValueError, match="Invalid --shard"):
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
    code = "from autograder.course.shard import shard_of; print([shard_of(n, 7) for n in ('ada', 'bo', 'chen', 'dev')])"
    outputs = {run([str(BIN / "python"), "-c", code], env={"PYTHONHASHSEED": seed}).stdout for seed in ("1", "2")}
    assert outputs == {str([shard_of(n, 7) for n in ("ada", "bo", "chen", "dev")]) + "\n"}


# six of the class, each of three shards with someone to grade (hana; bo and chen; ada, femi and gus): honest, wrong,
# hostile and ungradable (all eight, graded twice, took 54 s)
SHARDED = {name: CLASS[name] for name in ("ada", "bo", "chen", "femi", "gus", "hana")}


@pytest.mark.slow
def test_three_shards_merge_into_one_batch(tmp_path):
    """3 shards graded by separate processes into one folder, then merged, equal one unsharded batch."""
    students = write_class(tmp_path / "submitted", SHARDED)
    assert all(select(SHARDED, (k, 3)) for k in range(3)), "each shard should grade someone"
    whole = run(
        [
            str(BIN / "sdpa-grade"),
            "batch",
            str(students),
            "--json-dir",
            str(tmp_path / "whole"),
            "--csv",
            str(tmp_path / "whole.csv"),
            "--jobs",
            "2",
        ]
    )
    assert whole.returncode == 0, whole.stderr

    shared = tmp_path / "shared"
    command = [str(BIN / "sdpa-grade"), "batch", str(students), "--json-dir", str(shared), "--jobs", "1"]
    shards = [
        subprocess.Popen([*command, "--shard", f"{k}/3"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for k in range(3)
    ]
    finished = [(shard.wait(timeout=120), *shard.communicate()) for shard in shards]
    assert all(code == 0 for code, _, _ in finished), finished
    counts = [int(err.split("students,")[0].split()[-1]) for _, _, err in finished]  # "shard k/3: M students, ..."
    assert sum(counts) == len(SHARDED) and all(counts), counts

    merged = run(
        [
            str(BIN / "sdpa-grade"),
            "summary",
            str(students),
            "--json-dir",
            str(shared),
            "--csv",
            str(tmp_path / "merged.csv"),
        ]
    )
    assert merged.returncode == 0, merged.stderr
    assert f"Class summary: {len(SHARDED)} submissions" in merged.stdout
    assert outcomes(shared) == outcomes(tmp_path / "whole")
    assert (
        outcomes(shared)["ada"][0] == total() and outcomes(shared)["chen"][0] < total()
    )  # a real grading, not all zeros
    assert csv_rows(tmp_path / "merged.csv") == csv_rows(tmp_path / "whole.csv")

    def summary_without_times(text: str) -> str:  # grading times differ from run to run; everything else may not
        return "\n".join(line for line in text.splitlines() if not line.startswith("Grading time per submission"))

    assert summary_without_times(merged.stdout) == summary_without_times(whole.stdout)  # the same class summary


def test_summary_names_students_without_a_result(tmp_path):
    """`sdpa-grade summary` grades nothing; students with no result yet are named, and the exit code is 1."""
    students = write_class(tmp_path / "submitted")
    empty = tmp_path / "empty"
    result = run([str(BIN / "sdpa-grade"), "summary", str(students), "--json-dir", str(empty)])
    assert result.returncode == 1
    assert f"{len(CLASS)} of {len(CLASS)} students have no result yet: ada, bo" in result.stderr
    assert not list(empty.glob("*.json"))


def fake_results(folder, names):
    """A result for each of ``names``, as a shard writes it (a merge only reads them)."""
    folder.mkdir()
    for name in names:
        test = {"name": "test_shapes", "score": 2, "max_score": 2, "output": "", "visibility": "visible", "tags": []}
        (folder / f"{name}.json").write_text(
            json.dumps({"score": 2, "max_score": 2, "tests": [test], "execution_time": 1})
        )


def test_a_merge_with_students_missing_writes_no_csv_and_names_them_all(tmp_path):
    """A merge that is not whole says so, names every missing student, exits 1 and writes no CSV (nothing partial)."""
    students = write_class(tmp_path / "submitted")
    missing = ["bo", "dev", "gus"]
    fake_results(tmp_path / "grades", [name for name in CLASS if name not in missing])
    merged = run(
        [
            str(BIN / "sdpa-grade"),
            "summary",
            str(students),
            "--json-dir",
            str(tmp_path / "grades"),
            "--csv",
            str(tmp_path / "grades.csv"),
        ]
    )
    assert merged.returncode == 1, merged.stderr
    assert "3 of 8 students have no result yet: bo, dev, gus" in merged.stderr
    assert "no CSV written" in merged.stderr and not (tmp_path / "grades.csv").exists()
    assert "Class summary" not in merged.stdout  # no partial summary that could pass for the class's


def test_a_merge_with_students_missing_lists_more_than_ten(tmp_path):
    """Every missing student is named, however many: the list is what the instructor grades next."""
    folder = tmp_path / "submitted"
    folder.mkdir()
    for index in range(14):
        (folder / f"s{index:02d}.py").write_text("x = 1\n")
    merged = run([str(BIN / "sdpa-grade"), "summary", str(folder), "--json-dir", str(tmp_path / "grades")])
    assert merged.returncode == 1
    assert "14 of 14 students have no result yet: " + ", ".join(f"s{i:02d}" for i in range(14)) in merged.stderr


def test_partial_writes_the_csv_with_the_missing_students_marked(tmp_path):
    """--partial asks for the CSV all the same: every student has a row, the missing ones with no score;
    still exit 1."""
    students = write_class(tmp_path / "submitted")
    fake_results(tmp_path / "grades", [name for name in CLASS if name != "dev"])
    merged = run(
        [
            str(BIN / "sdpa-grade"),
            "summary",
            str(students),
            "--json-dir",
            str(tmp_path / "grades"),
            "--partial",
            "--csv",
            str(tmp_path / "grades.csv"),
        ]
    )
    assert merged.returncode == 1 and "1 of 8 students have no result yet: dev" in merged.stderr
    with open(tmp_path / "grades.csv") as handle:
        rows = {row[0]: row[1:4] for row in csv.reader(handle)}  # then the provenance columns (test_provenance.py)
    assert rows.pop("student") == ["score", "max_score", "status"]
    assert rows.pop("dev") == ["", "", "missing"]
    assert rows == {name: ["2", "2", "graded"] for name in CLASS if name != "dev"}
    assert "Class summary: 7 submissions" in merged.stdout


def test_partial_belongs_to_summary(tmp_path):
    """--partial is summary's alone: batch given it is a usage error (a grading batch has no missing students)."""
    students = write_class(tmp_path / "submitted")
    result = run([str(BIN / "sdpa-grade"), "batch", str(students), "--json-dir", str(tmp_path / "g"), "--partial"])
    assert result.returncode == 2 and "--partial" in result.stderr
