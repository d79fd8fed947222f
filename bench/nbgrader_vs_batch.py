"""Print the wall time of `nbgrader autograde` and of `sdpa-grade --batch --jobs 2` on the same solved notebooks.

    .venv/bin/python bench/nbgrader_vs_batch.py [--students 16]

Both grade the same notebooks (the solved source notebook, once per student) in a temporary
copy of the course; nbgrader's autograde grades them one after another with sdpa-grade's own
pipeline (autograder/autograde.py, in place of nbgrader's kernel), sdpa-grade --batch two at a time.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def timed(args: list[str], cwd: Path, env: dict) -> float:
    start = time.perf_counter()
    result = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{result.stderr[-3000:]}")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--students", type=int, default=16)
    students = parser.parse_args().students
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    with tempfile.TemporaryDirectory() as folder:
        course = Path(folder) / "course"
        shutil.copytree(ROOT / "assignments", course)
        solved = course / "source" / "sdpa" / "sdpa.ipynb"
        for index in range(students):
            target = course / "submitted" / f"student{index:02d}" / "sdpa"
            target.mkdir(parents=True)
            shutil.copy(solved, target / "sdpa.ipynb")
        timed([str(BIN / "nbgrader"), "generate_assignment", "sdpa", "--force"], course, env)
        nbgrader = timed([str(BIN / "nbgrader"), "autograde", "sdpa", "--force"], course, env)
        batch = timed(
            [
                str(BIN / "sdpa-grade"),
                "--batch",
                str(course / "submitted"),
                "--jobs",
                "2",
                "--json-dir",
                str(Path(folder) / "grades"),
            ],
            course,
            env,
        )
    print(f"{students} solved notebooks:")
    print(f"  nbgrader autograde:             {nbgrader:6.1f} s ({nbgrader / students:.2f} s per notebook)")
    print(f"  sdpa-grade --batch --jobs 2:    {batch:6.1f} s ({batch / students:.2f} s per notebook)")
    print(f"  ratio: sdpa-grade is {nbgrader / batch:.1f} times as fast")


if __name__ == "__main__":
    main()
