"""Print how long grading takes: one submission, a batch of 40 with --jobs 2, and where the time goes.

    .venv/bin/python bench/grading_speed.py [--students 40] [--jobs 2]

Figures are wall-clock seconds on this machine; compare runs made in the same session.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def timed(args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(args, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    reference = ROOT / "reference" / "attention.py"

    singles = [timed([str(BIN / "sdpa-grade"), str(reference)]) for _ in range(3)]
    print(f"one submission (sdpa-grade, whole process): median {statistics.median(singles):.2f} s of {len(singles)} runs")

    from autograder.config import load_settings
    from autograder.grade import grade

    grading = grade(reference, load_settings())
    checks = sorted(grading.outcomes, key=lambda o: -o.seconds)
    total = sum(o.seconds for o in checks)
    print(f"inside one grading: {time.perf_counter() - grading.started:.2f} s, of which checks {total:.2f} s; slowest checks:")
    for outcome in checks[:6]:
        print(f"  {outcome.check:28s} {outcome.seconds:6.2f} s")

    folder = Path(tempfile.mkdtemp(prefix="sdpa-bench-"))
    try:
        for index in range(args.students):
            shutil.copy(reference, folder / f"student{index:03d}.py")
        wall = timed([str(BIN / "sdpa-grade"), "--batch", str(folder), "--jobs", str(args.jobs),
                      "--json-dir", str(folder.parent / f"{folder.name}-out")])
        print(f"batch of {args.students} correct submissions, --jobs {args.jobs}: {wall:.1f} s"
              f" ({wall / args.students:.2f} s per submission)")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(folder.parent / f"{folder.name}-out", ignore_errors=True)


if __name__ == "__main__":
    main()
