"""Print honest students' grading times in a batch, with and without a neighbour that spins 64 helpers.

    PYTHONPATH=. .venv/bin/python bench/cpu_share.py [--rounds 3] [--honest 4] [--jobs 2] [--tree REV]

Each round grades two batches with `sdpa-grade --batch --jobs 2`: the honest students alone (copies of the
reference), and the same students after one whose submission forks 64 helpers that spin for as long as its sandbox
lives (tests/submissions/time/spin_helpers.py), graded first, so that every honest grading runs beside it. Printed:
each honest grading's execution_time (its results.json), each batch's median, the median of the rounds' medians for
each kind of batch, and their ratio (issue 32 asks at most 1.5). ``--tree REV`` grades with the code of a git
revision instead of this tree's (the figures from before each sandbox had a CPU weight of its own).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPINNER = ROOT / "tests" / "submissions" / "time" / "spin_helpers.py"
# sdpa-grade run from the tree given as the first argument, whatever this environment has installed
FROM_TREE = "import sys; sys.path.insert(0, sys.argv.pop(1)); from autograder.cli import main; sys.exit(main())"


def make_batch(folder: Path, honest: int, spinner: bool) -> None:
    """``honest`` copies of the reference (honest-1, ...), after the spinner ("a-spinner", first in name order)."""
    reference = (ROOT / "reference" / "attention.py").read_text()
    folder.mkdir()
    if spinner:
        (folder / "a-spinner.py").write_text(f"{reference}\n\n{SPINNER.read_text()}")
    for index in range(honest):
        (folder / f"honest-{index + 1}.py").write_text(reference)


def grade_batch(tree: Path, folder: Path, jobs: int) -> dict[str, tuple[float, float]]:
    """Student -> (execution_time of its grading, when its results file was written), graded by ``tree``'s code."""
    out = folder.parent / f"{folder.name}-out"
    shutil.rmtree(out, ignore_errors=True)
    args = [sys.executable, "-c", FROM_TREE, str(tree), "--batch", str(folder), "--jobs", str(jobs)]
    subprocess.run([*args, "--json-dir", str(out)], check=True, capture_output=True)
    found = {}
    for path in out.glob("*.json"):
        result = json.loads(path.read_text())
        if "execution_time" in result:
            found[path.stem] = (float(result["execution_time"]), path.stat().st_mtime)
    shutil.rmtree(out, ignore_errors=True)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--honest", type=int, default=4, help="honest students in each batch")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--tree", metavar="REV", help="grade with the code of this git revision")
    options = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="sdpa-cpu-share-"))
    tree = ROOT
    try:
        if options.tree:
            tree = base / "tree"
            tree.mkdir()
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", options.tree], check=True, capture_output=True)
            subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
        make_batch(base / "alone", options.honest, spinner=False)
        make_batch(base / "beside", options.honest, spinner=True)
        medians: dict[str, list[float]] = {"alone": [], "beside": []}
        for round_ in range(options.rounds):
            for kind in medians:
                started = time.monotonic()
                graded = grade_batch(tree, base / kind, options.jobs)
                honest = sorted(seconds for name, (seconds, _) in graded.items() if name.startswith("honest"))
                medians[kind].append(statistics.median(honest))
                line = f"round {round_ + 1}, {kind:6s}: honest gradings " + ", ".join(f"{s:.1f}" for s in honest)
                line += f" s (median {medians[kind][-1]:.1f} s); batch {time.monotonic() - started:.0f} s"
                if "a-spinner" in graded:
                    spun, written = graded["a-spinner"]
                    outlasted = all(written >= at for name, (_, at) in graded.items() if name.startswith("honest"))
                    line += f"; the spinner's grading {spun:.1f} s, " + (
                        "outlasting" if outlasted else "NOT outlasting"
                    )
                    line += " every honest one"
                print(f"{line} (load average {os.getloadavg()[0]:.1f})", flush=True)
        alone, beside = (statistics.median(medians[kind]) for kind in ("alone", "beside"))
        print(
            f"honest grading, median of {options.rounds} rounds' medians"
            f" (--jobs {options.jobs}, {options.honest} honest): alone {alone:.1f} s,"
            f" beside 64 spinning helpers {beside:.1f} s: {beside / alone:.2f}x"
        )
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
