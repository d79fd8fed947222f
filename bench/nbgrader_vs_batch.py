"""Print the wall time of `nbgrader autograde` and of `sdpa-grade batch` on the same solved notebooks.

    .venv/bin/python bench/nbgrader_vs_batch.py [--students 16] [--rounds 3] [--jobs 1]

Both grade the same notebooks (the solved source notebook, once per student) in a temporary
copy of the course; nbgrader's autograde grades them one after another with sdpa-grade's own
pipeline (autograder/nbgrader_path/autograde.py, in place of nbgrader's kernel, one warm zygote for the run),
sdpa-grade batch ``--jobs`` at a time. The two are interleaved (nbgrader, batch, nbgrader, ...),
``--rounds`` times each, and the medians compared: the target is autograde at most 1.5 times
the batch with one job.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
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
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=1)
    options = parser.parse_args()
    students = options.students
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    nbgrader, batch = [], []
    with tempfile.TemporaryDirectory() as folder:
        course = Path(folder) / "course"
        shutil.copytree(ROOT / "assignments", course)
        solved = course / "source" / "sdpa" / "sdpa.ipynb"
        for index in range(students):
            target = course / "submitted" / f"student{index:02d}" / "sdpa"
            target.mkdir(parents=True)
            shutil.copy(solved, target / "sdpa.ipynb")
        timed([str(BIN / "nbgrader"), "generate_assignment", "sdpa", "--force"], course, env)
        grades = Path(folder) / "grades"
        for round_ in range(options.rounds):
            nbgrader.append(timed([str(BIN / "nbgrader"), "autograde", "sdpa", "--force"], course, env))
            command = [str(BIN / "sdpa-grade"), "batch", str(course / "submitted"), "--jobs", str(options.jobs)]
            batch.append(timed([*command, "--json-dir", str(grades), "--force"], course, env))
            print(f"  round {round_ + 1}: autograde {nbgrader[-1]:6.1f} s, batch {batch[-1]:6.1f} s", flush=True)
    slow, fast = statistics.median(nbgrader), statistics.median(batch)
    print(f"{students} solved notebooks, medians of {options.rounds} interleaved rounds:")
    print(f"  nbgrader autograde:             {slow:6.1f} s ({slow / students:.2f} s per notebook)")
    print(f"  sdpa-grade batch --jobs {options.jobs}:      {fast:6.1f} s ({fast / students:.2f} s per notebook)")
    print(f"  ratio: autograde takes {slow / fast:.2f} times the batch's (target: at most 1.5 at --jobs 1)")
    print(f"  load average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
