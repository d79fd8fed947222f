"""Print honest students' grading times in a batch, with and without a neighbour that spins 64 helpers.

    PYTHONPATH=. .venv/bin/python bench/cpu_share.py [--rounds 3] [--honest 4] [--jobs 2] [--tree REV]

Each round grades the same honest students (copies of the reference) twice with `sdpa-grade --batch`: alone with
``--jobs 2``, and with ``--jobs 1`` beside a neighbour that holds the other slot: a sandbox of the same code whose
submission forks 64 helpers that spin for as long as it lives (tests/submissions/time/spin_helpers.py), loaded and
called once before the batch starts and closed after it (a spinner whose grading outlasts the batch: in a batch of
its own its grading would end, by its budget or its time-outs, while honest students wait). Printed: each honest
grading's execution_time (its results.json), each batch's median, the median of the rounds' medians for each kind,
and their ratio (the target: at most 1.5). ``--tree REV`` grades, and holds the spinner, with the code of a git
revision instead of this tree's (for instance one where the sandboxes share no CPU weight).
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

from grading_speed import FROM_TREE  # this folder: sdpa-grade run from a given tree

ROOT = Path(__file__).resolve().parent.parent
SPINNER = ROOT / "tests" / "submissions" / "time" / "spin_helpers.py"
# The spinning neighbour, in a sandbox of the tree's code: loaded, called once (its helpers spin from then on), held
# until stdin closes.
HOLD = """
import dataclasses, sys
sys.path.insert(0, sys.argv[1])
from pathlib import Path
import torch
from autograder.config import load_settings
from autograder.sandbox.client import Sandbox
with Sandbox(Path(sys.argv[2]), dataclasses.asdict(load_settings().limits)) as box:
    loaded = box.load()
    called = box.call("attention_scores", (torch.ones(1, 2, 3), torch.ones(1, 4, 3)), timeout=10.0)
    print("spinning" if loaded.ok and called.ok else f"not spinning: {loaded.describe()}; {called.describe()}")
    sys.stdout.flush()
    sys.stdin.read()
"""


def make_batch(folder: Path, honest: int) -> None:
    """``honest`` copies of the reference (honest-1, ...)."""
    reference = (ROOT / "reference" / "attention.py").read_text()
    folder.mkdir()
    for index in range(honest):
        (folder / f"honest-{index + 1}.py").write_text(reference)


def hold_spinner(tree: Path, folder: Path) -> subprocess.Popen:
    """The spinning neighbour, started and spinning; close its stdin to end it."""
    submission = folder / "spinner.py"
    submission.write_text(f"{(ROOT / 'reference' / 'attention.py').read_text()}\n\n{SPINNER.read_text()}")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(tree), str(submission)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    said = holder.stdout.readline().strip()
    if said != "spinning":
        holder.kill()
        raise SystemExit(f"the spinner did not start: {said}")
    return holder


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
        make_batch(base / "honest", options.honest)
        medians: dict[str, list[float]] = {"alone": [], "beside": []}
        for round_ in range(options.rounds):
            for kind in medians:
                started = time.monotonic()
                holder = hold_spinner(tree, base) if kind == "beside" else None
                try:
                    jobs = options.jobs - (holder is not None)  # the spinner holds one of the slots
                    graded = grade_batch(tree, base / "honest", jobs)
                finally:
                    if holder is not None:
                        holder.stdin.close()
                        holder.wait()
                honest = sorted(seconds for seconds, _ in graded.values())
                medians[kind].append(statistics.median(honest))
                line = f"round {round_ + 1}, {kind:6s} (--jobs {jobs}): honest gradings "
                line += ", ".join(f"{s:.1f}" for s in honest)
                line += f" s (median {medians[kind][-1]:.1f} s); {time.monotonic() - started:.0f} s in all"
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
