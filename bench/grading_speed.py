"""Print how long grading takes: one submission, a batch of 40 with --jobs 2, and where the time goes.

    .venv/bin/python bench/grading_speed.py [--students 40] [--jobs 2] [--against REV [--repeat 3]]

Figures are wall-clock seconds on this machine; compare runs made in the same session.
``--against REV`` times the batch with the code of git revision REV too, interleaved with this
tree's (REV, this, REV, this, ...), and prints both medians: a ratio from one session.
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
# sdpa-grade run from the tree given as the first argument, whatever this environment has installed
FROM_TREE = "import sys; sys.path.insert(0, sys.argv.pop(1)); from autograder.cli import main; sys.exit(main())"


def timed(args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(args, check=True, capture_output=True)
    return time.perf_counter() - start


def batch(tree: Path, folder: Path, jobs: int) -> float:
    out = folder.parent / f"{folder.name}-out"
    shutil.rmtree(out, ignore_errors=True)
    try:
        return timed([sys.executable, "-c", FROM_TREE, str(tree), "--batch", str(folder), "--jobs", str(jobs),
                      "--json-dir", str(out)])
    finally:
        shutil.rmtree(out, ignore_errors=True)


def against(revision: str, folder: Path, jobs: int, repeat: int) -> None:
    """The batch with REV's code and with this tree's, interleaved; each median."""
    other = Path(tempfile.mkdtemp(prefix="sdpa-bench-rev-"))
    try:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision], check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", str(other)], input=archive.stdout, check=True)
        times: dict[str, list[float]] = {revision: [], "this tree": []}
        for _ in range(repeat):
            for name, tree in ((revision, other), ("this tree", ROOT)):
                times[name].append(batch(tree, folder, jobs))
                print(f"  {name}: {times[name][-1]:.1f} s", flush=True)
        for name, seconds in times.items():
            print(f"batch with {name}: median {statistics.median(seconds):.1f} s of {repeat}")
    finally:
        shutil.rmtree(other, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--against", metavar="REV", help="also time the batch with git revision REV, interleaved")
    parser.add_argument("--repeat", type=int, default=3, help="batches per tree with --against")
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
        wall = batch(ROOT, folder, args.jobs)
        print(f"batch of {args.students} correct submissions, --jobs {args.jobs}: {wall:.1f} s"
              f" ({wall / args.students:.2f} s per submission)")
        if args.against:
            against(args.against, folder, args.jobs, args.repeat)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
