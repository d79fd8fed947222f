"""`sdpa-grade batch --show STUDENT`: a student who is not in the class (or not in the shard) is refused before anything
is graded or written."""

from __future__ import annotations

from autograder.course.shard import select
from tests.helpers import BIN, run, write_class


def test_show_names_a_student_of_the_shard_or_nothing_is_written(tmp_path):
    """--show with a name the class lacks, or a student of another shard, exits 2 naming the verb, the name and the
    students it could show; no results folder is made."""
    folder = write_class(tmp_path / "class", {"alice": "correct", "bob": "correct", "carol": "correct"})
    out = tmp_path / "class-grades"
    done = run([str(BIN / "sdpa-grade"), "batch", str(folder), "--show", "zed"], timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (
        f"sdpa-grade batch: Invalid --show zed: no such student in {folder} (have: alice, bob, carol)"
    )
    assert not out.exists()
    roster = {name: folder / name for name in ("alice", "bob", "carol")}
    first = select(roster, (0, 2))
    elsewhere = next(name for name in roster if name not in first)
    done = run([str(BIN / "sdpa-grade"), "batch", str(folder), "--shard", "0/2", "--show", elsewhere], timeout=120)
    assert done.returncode == 2, done.stderr
    assert f"Invalid --show {elsewhere}: no such student in {folder} (have: {', '.join(first)})" in done.stderr
    assert not out.exists()
