"""Print what one cold grading costs against a bare ``python -c "import torch, pytest"``, and where it goes.

    .venv/bin/python bench/cold_start.py [--rounds 5] [--submission FILE] [--against REV[,REV...]] [--breakdown]

A cold grading is ``sdpa-grade FILE --json OUT`` in a fresh process (what Gradescope runs once per
submission). Each round runs the bare import (and the same ending in ``os._exit``, as ``sdpa-grade`` ends without the
interpreter's teardown), then the cold grading with the code of each tree
(``--against`` revisions first, then this tree), one after another, so that the machine's load hits
them alike; the figures are medians over the rounds, and the ratios compare within the run.
CPU seconds are what the kernel charged to the command and to every process it started (the zygote,
its keepers and sandboxes: the zygote reaps its children itself, so ``RUSAGE_CHILDREN`` misses them),
counted in a cpuacct (v1) or v2 cgroup of the bench's own where this user may make one; the
``RUSAGE_CHILDREN`` figure (the command and the processes it waited for) is printed beside it.
Every grading's results must give the same points per check as the first one, on every tree.

``--breakdown`` also measures, the same number of rounds, the steps a cold grading pays one after
another: Python's start, ``import torch``, the grading process's own imports (``autograder.grade``), a
worker zygote started and ready, and prints the grading process's slowest imports (``-X importtime``)
and the modules it imports while grading (after its own imports).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from grading_speed import FROM_TREE, counted  # this folder: the batch bench's CPU counter

ROOT = Path(__file__).resolve().parent.parent
BARE = [sys.executable, "-c", "import torch, pytest"]
# the same, less the interpreter's teardown at exit, which sdpa-grade skips (autograder/quick_exit.py): a second
# baseline, printed beside the first, so that what the skip saves of the bare command's own cost shows
BARE_QUICK = [sys.executable, "-c", "import os, torch, pytest; os._exit(0)"]
# a worker zygote started and ready, as one grading starts it: prints the zygote's own CPU seconds (not its parent's)
ZYGOTE = (
    "import os, sys; sys.path.insert(0, sys.argv.pop(1)); from autograder.sandbox.zygote import Zygote\n"
    "with Zygote() as zygote:\n"
    "    zygote.wait_ready()\n"
    "    stat = open(f'/proc/{zygote.process.pid}/stat').read().rsplit(')', 1)[1].split()\n"
    "    print((int(stat[11]) + int(stat[12])) / os.sysconf('SC_CLK_TCK'))"
)
# the modules a grading imports once the grading process's own imports are done
IMPORTED_WHILE_GRADING = (
    "import sys, json; sys.path.insert(0, sys.argv.pop(1)); from pathlib import Path\n"
    "from autograder.config import load_settings; from autograder.grade import grade\n"
    "before = set(sys.modules); grade(Path(sys.argv[1]), load_settings())\n"
    "print(json.dumps(sorted(set(sys.modules) - before)))"
)


def run(command: list[str]) -> tuple[float, float | None, float, subprocess.CompletedProcess]:
    """Wall seconds, cgroup CPU seconds (None: no cgroup), RUSAGE_CHILDREN CPU seconds, and the finished process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall, cpu, done = counted(command, capture_output=True, text=True, timeout=600)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, cpu, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, done


def points(results: Path) -> dict[str, float]:
    result = json.loads(results.read_text())
    return {"total": result["score"], **{test["name"]: test["score"] for test in result["tests"]}}


def grading(tree: Path, submission: Path, out: Path) -> tuple[float, float | None, float, dict[str, float]]:
    out.unlink(missing_ok=True)
    wall, cpu, waited, done = run([sys.executable, "-c", FROM_TREE, str(tree), str(submission), "--json", str(out)])
    if done.returncode != 0:
        raise SystemExit(f"sdpa-grade exited {done.returncode} with {tree}:\n{done.stderr[-3000:]}")
    return wall, cpu, waited, points(out)


def trees_of(revisions: list[str]) -> dict[str, Path]:
    trees = {}
    for revision in revisions:
        trees[revision] = Path(tempfile.mkdtemp(prefix="sdpa-bench-rev-"))
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision], check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", str(trees[revision])], input=archive.stdout, check=True)
    trees["this tree"] = ROOT
    return trees


def median(values: list) -> float | None:
    values = [value for value in values if value is not None]
    return statistics.median(values) if values else None


def show(name: str, rows: list[tuple]) -> tuple[float | None, float | None, float | None]:
    wall, cpu, waited = (median([row[i] for row in rows]) for i in range(3))
    cgroup = f"{cpu:.2f} CPU-s (cgroup), " if cpu is not None else ""
    print(f"{name:34s} {cgroup}{waited:.2f} CPU-s (RUSAGE_CHILDREN), {wall:.2f} s wall  (medians of {len(rows)})")
    return wall, cpu, waited


def ratios(name: str, of: tuple, to: tuple) -> str:
    parts = [f"{label} {a / b:.2f}" for label, a, b in zip(("wall", "CPU", "CPU waited"), of, to) if a and b]
    return f"{name}: " + ", ".join(parts)


def breakdown(tree: Path, submission: Path, rounds: int) -> None:
    steps = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "import torch": [sys.executable, "-c", "import torch"],
        "import torch, pytest": BARE,
        "the grader's imports": [
            sys.executable,
            "-c",
            FROM_TREE.split("; from")[0] + "; import autograder.grade",
            str(tree),
        ],  # fmt: skip
        "a zygote, alone, until ready": [sys.executable, "-c", ZYGOTE, str(tree)],
    }
    rows: dict[str, list] = {name: [] for name in steps}
    for _ in range(rounds):
        for name, command in steps.items():
            wall, cpu, waited, done = run(command)
            if done.returncode:
                raise SystemExit(f"{name} failed:\n{done.stderr[-2000:]}")
            if command[2] == ZYGOTE:  # the zygote's own CPU, by its /proc stat: not the process that started it
                cpu = waited = float(done.stdout.split()[-1])
            rows[name].append((wall, cpu, waited))
    print("\nsteps, each alone (a cold grading pays the grader's imports and a zygote, then grades):")
    for name in steps:
        show(name, rows[name])
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", FROM_TREE.split("; from")[0] + "; import autograder.grade",
         str(tree)], capture_output=True, text=True, check=True,
    )  # fmt: skip
    top = []
    for line in done.stderr.splitlines()[1:]:
        _, cumulative, name = line.split("|")
        depth = (len(name) - len(name.lstrip())) // 2
        if depth <= 2:
            top.append((int(cumulative) / 1e6, "  " * depth + name.strip()))
    print("\nthe grader's imports, -X importtime (cumulative wall seconds, the slowest of the first levels):")
    for seconds, name in sorted(top, reverse=True)[:12]:
        print(f"  {seconds:6.2f}  {name}")
    done = subprocess.run(
        [sys.executable, "-c", IMPORTED_WHILE_GRADING, str(tree), str(submission)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    imported = json.loads(done.stdout.splitlines()[-1])
    tops: dict[str, int] = {}
    for module in imported:
        tops[module.split(".")[0]] = tops.get(module.split(".")[0], 0) + 1
    print(f"\nmodules the grading process imports while grading: {len(imported)}; by package:", end=" ")
    print(", ".join(f"{name} {count}" for name, count in sorted(tops.items(), key=lambda item: -item[1])[:8]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--submission", type=Path, default=ROOT / "reference" / "attention.py")
    parser.add_argument("--against", metavar="REV[,REV...]", help="also grade with the code of these revisions")
    parser.add_argument("--breakdown", action="store_true", help="also measure the steps of a cold grading")
    args = parser.parse_args()
    trees = trees_of(args.against.split(",") if args.against else [])
    folder = Path(tempfile.mkdtemp(prefix="sdpa-bench-cold-"))
    try:
        submission = folder / "attention.py"  # a copy: the grading reads nothing of the tree's own reference as input
        shutil.copy(args.submission, submission)
        print(f"load average before: {os.getloadavg()}")
        rows: dict[str, list] = {"bare": [], "bare, os._exit": [], **{name: [] for name in trees}}
        first = None
        for index in range(args.rounds):
            wall, cpu, waited, _ = run(BARE)
            rows["bare"].append((wall, cpu, waited))
            line = [f"round {index + 1}: bare {cpu or waited:.2f}"]
            wall, cpu, waited, _ = run(BARE_QUICK)
            rows["bare, os._exit"].append((wall, cpu, waited))
            line.append(f"bare ending in os._exit {cpu or waited:.2f}")
            for name, tree in trees.items():
                *figures, got = grading(tree, submission, folder / "results.json")
                first = got if first is None else first
                if got != first:
                    changed = sorted(k for k in set(got) | set(first) if got.get(k) != first.get(k))
                    raise SystemExit(f"{name}: points differ from the first grading's in {changed}")
                rows[name].append(tuple(figures))
                line.append(f"{name} {figures[1] or figures[2]:.2f}")
            print(", ".join(line) + f" CPU-s (load average {os.getloadavg()[0]:.1f})", flush=True)
        print(f"\nevery grading: {first['total']:g} points, the same points per check on every tree and round")
        bare = show("bare import torch, pytest", rows["bare"])
        quick = show("the same, ending in os._exit", rows["bare, os._exit"])
        medians = {name: show(f"cold sdpa-grade ({name})", rows[name]) for name in trees}
        for name in trees:
            print(ratios(f"{name} / bare", medians[name], bare))
            print(ratios(f"{name} / bare ending in os._exit", medians[name], quick))
        for name in trees:
            if name != "this tree":
                print(ratios(f"this tree / {name}", medians["this tree"], medians[name]))
        if args.breakdown:
            breakdown(ROOT, submission, args.rounds)
        print(f"load average after: {os.getloadavg()}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        for name, tree in trees.items():
            if name != "this tree":
                shutil.rmtree(tree, ignore_errors=True)


if __name__ == "__main__":
    main()
