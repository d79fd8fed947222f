"""Print what a student waits for on Gradescope, and project the time to grade a class of 1,000.

    .venv/bin/python bench/scale.py [--runs 5] [--students 24] [--repeats 3]

1. Builds the Gradescope bundle (sdpa-build --gradescope), unpacks it into a fake /autograder
   (AUTOGRADER_ROOT), runs its setup.sh, then run_autograder on a correct submission --runs
   times: each run is a cold start of the grader (a new process that imports torch, starts its
   worker and grades), which is what a student waits for once Gradescope's container is up.
2. Grades a class of --students (a mix of correct, wrong, hostile and ungradable submissions)
   with the installed wheel's `sdpa-grade batch --jobs <cores>`, --repeats times, and reads the
   CPU time every process of the batch used (RUSAGE_CHILDREN): core-seconds per submission.
3. Projects a class of 1,000 from the median core-seconds: one 16-core machine, and N Slurm nodes
   of 16 cores each, as 1000 * core_s / (16 * N) plus one batch start per node (taken as one
   cold-start grading, an upper bound).

Grading is CPU-bound in processes of its own (the worker runs torch on one thread), so the
projection assumes it scales with cores; queue wait and Gradescope's container start are not in it.
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
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
SUBMISSIONS = ROOT / "tests" / "submissions"
# a class: half correct in various ways, 40% with a known mistake, 10% hostile or ungradable
MIX = [
    "correct",
    "correct_einsum",
    "correct_stable_softmax",
    "correct",
    "correct_scale_q_first",
    "mistake_divide_by_dk",
    "mistake_no_scale",
    "mistake_mask_inverted",
    "mistake_nan_rows",
    "hang_in_softmax",
    "correct",
    "correct_finfo_fill",
    "correct_float64_inside",
    "correct",
    "mistake_transpose_12",
    "mistake_zero_fill",
    "mistake_loop_over_queries",
    "mistake_uniform_rows",
    "syntax_error",
    "correct",
]


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH") and not k.startswith("SDPA_")}
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if p and Path(p) != BIN)
    return {**env, **extra}


def source(name: str) -> str:
    reference = (ROOT / "reference" / "attention.py").read_text()
    if name == "correct":
        return reference
    overlay = SUBMISSIONS / "overlays" / f"{name}.py"
    if overlay.is_file():
        return reference + "\n" + overlay.read_text()
    return (SUBMISSIONS / "standalone" / f"{name}.py").read_text()


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--students", type=int, default=24)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=os.cpu_count())
    parser.add_argument("--root", type=Path, help="a fake /autograder that setup.sh already set up (kept): skip 1.")
    parser.add_argument("--keep", action="store_true", help="keep the fake /autograder, and print where it is")
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores; load average at start {os.getloadavg()[0]:.1f}")
    work = Path(tempfile.mkdtemp(prefix="sdpa-scale-"))
    try:
        root = args.root or work / "autograder"
        env = clean_env(AUTOGRADER_ROOT=str(root))
        if args.root is None:
            (root / "source").mkdir(parents=True)
            subprocess.run(
                [str(BIN / "sdpa-build"), "--gradescope", str(work / "autograder.zip")],
                cwd=ROOT,
                check=True,
                capture_output=True,
            )
            with zipfile.ZipFile(work / "autograder.zip") as bundle:
                bundle.extractall(root / "source")
            start = time.perf_counter()
            setup = subprocess.run(
                ["bash", str(root / "source" / "setup.sh")], env=env, capture_output=True, text=True, check=True
            )
            print(f"setup.sh (once per autograder image): {time.perf_counter() - start:.0f} s")
            print("  " + "\n  ".join(line for line in setup.stdout.splitlines() if line.startswith("setup.sh")))

        (root / "submission").mkdir(exist_ok=True)
        (root / "submission" / "attention.py").write_text(source("correct"))
        waits, cpus = [], []
        for _ in range(args.runs):
            cpu, start = children_cpu(), time.perf_counter()
            subprocess.run(["bash", str(root / "source" / "run_autograder")], env=env, capture_output=True, check=True)
            waits.append(time.perf_counter() - start)
            cpus.append(children_cpu() - cpu)
            assert json.loads((root / "results" / "results.json").read_text())["score"] == 55
        cold = statistics.median(waits)
        print(
            f"run_autograder, correct submission, cold start: median {cold:.2f} s wall of {args.runs}"
            f" (min {min(waits):.2f}, max {max(waits):.2f}); CPU {statistics.median(cpus):.2f} core-s"
        )

        if not args.students:
            return
        klass = work / "class"
        klass.mkdir()
        for index in range(args.students):
            (klass / f"student{index:04d}.py").write_text(source(MIX[index % len(MIX)]))
        core_s, walls = [], []
        for _ in range(args.repeats):
            out = work / "grades"
            shutil.rmtree(out, ignore_errors=True)
            cpu, start = children_cpu(), time.perf_counter()
            subprocess.run(
                [
                    str(root / "venv" / "bin" / "sdpa-grade"),
                    "batch",
                    str(klass),
                    "--json-dir",
                    str(out),
                    "--jobs",
                    str(args.jobs),
                ],
                env=env,
                capture_output=True,
                check=True,
            )
            walls.append(time.perf_counter() - start)
            core_s.append((children_cpu() - cpu) / args.students)
        per = statistics.median(core_s)
        wall = statistics.median(walls)
        print(
            f"batch of {args.students} mixed submissions, --jobs {args.jobs} on {os.cpu_count()} cores: median wall"
            f" {wall:.1f} s ({wall / args.students:.2f} s each); CPU {per:.2f} core-s per submission"
            f" (median of {args.repeats}: {', '.join(f'{c:.2f}' for c in core_s)})"
        )
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(f"largest process of any run: {peak:.0f} MiB resident")

        start_cost = cold  # one batch's start (python, torch, the worker zygote): at most one cold grading
        for nodes in (1, 2, 4, 8):
            seconds = 1000 * per / (16 * nodes) + start_cost
            print(f"projected, 1,000 submissions, {nodes} x 16 cores: {seconds / 60:.1f} min ({seconds:.0f} s)")
        print(f"load average at end {os.getloadavg()[0]:.1f}")
    finally:
        if args.keep and args.root is None:
            print(f"kept {work / 'autograder'}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
