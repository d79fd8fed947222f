"""Print how reliable the CPU timing check is, for every loop and honest variant, under load.

    .venv/bin/python bench/timing_reliability.py [--runs 10] [--busy 2] [--graders 2] [--only NAME,...]

Two busy processes (``python -c 'while True: pass'``) compete for the CPUs the whole time
(killed at the end), and ``--graders`` other graders (``sdpa-grade`` on the reference, one after
another, each with a TMPDIR of its own) run beside. Each run of a variant loads it in a fresh sandbox,
and the reference in another, and measures every shape of the check exactly as ``test_timing_cpu`` does
(autograder/checks/timing.py: fresh inputs per call, outputs checked, interleaved rounds,
a shape over the budget judged by how its cost grows: ``timing.judge``). Prints, per variant and shape, the
figure that decided (the student/reference CPU-time ratio, or over the budget the ratio of their growths; min /
median / max over runs), the wall-clock one, and how many runs the check failed; then the margins against the
budget.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from autograder.checks.cases import Draw
from autograder.checks.student import Reference, Student
from autograder.checks.timing import CPU_REPEAT, CPU_SHAPES, GROWTH_TO, WALL_SLACK, judge
from autograder.config import load_settings
from autograder.sandbox.client import Sandbox
from autograder.sandbox.zygote import Zygote

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "reference" / "attention.py"
OVERLAYS = ROOT / "tests" / "submissions" / "overlays"
VARIANTS = Path(__file__).resolve().parent / "variants"
HONEST = [
    "reference",
    "correct_einsum",
    "correct_float64_inside",
    "correct_stable_softmax",
    "correct_finfo_fill",
    "correct_scale_q_first",
    "correct_where_mask",
    "correct_nanogpt",
    "correct_torch_docs_sdpa",
    "correct_diffusers_baddbmm",
]
LOOPS = [
    "mistake_loop_over_batches",
    "mistake_loop_over_heads",
    "mistake_loop_over_queries",
    "loop_scores_rows",
    "loop_softmax_rows",
    "mistake_loop_output_product",
    "loop_unbind_output",
    "cheat_memoised_loop",
    "cheat_work_in_helpers",
    "mistake_loop_only_without_mask",
    "mistake_loop_only_when_causal",
]


# another grader beside the bench: sdpa-grade on the reference, again and again, with a TMPDIR of its own
GRADER_LOOP = (
    """
import os, subprocess, sys, tempfile
while True:
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.argv[1], "grade", sys.argv[2], "--json", os.path.join(tmp, "r.json")], """
    """env={**os.environ, "TMPDIR": tmp},
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
"""
)


def submission(name: str, folder: Path) -> Path:
    """The reference, or the reference with an overlay (tests/submissions/overlays or bench/variants) appended."""
    if name == "reference":
        return REFERENCE
    overlay = next(path for path in (OVERLAYS / f"{name}.py", VARIANTS / f"{name}.py") if path.exists())
    path = folder / f"{name}.py"
    path.write_text(f"{REFERENCE.read_text()}\n\n{overlay.read_text()}")
    return path


def one_run(path: Path, settings, zygote: Zygote) -> tuple[list, bool, str]:
    """Every shape measured as the check measures it: (first measurement per shape, failed?, why)."""
    timing, limits = settings.timing, dataclasses.asdict(settings.limits)
    draw = Draw(secrets.randbits(62))
    with (
        Sandbox(path, limits, zygote=zygote) as student_box,
        Sandbox(REFERENCE, limits, zygote=zygote) as reference_box,
    ):
        if not (student_box.load().ok and reference_box.load().ok):
            return [], True, "did not load"
        student = Student(student_box, limits["call_timeout"])
        reference = Reference(reference_box, limits["call_timeout"])
        firsts, failed, why = [], False, ""
        for shape in CPU_SHAPES:
            try:
                passed, found = judge(
                    student,
                    reference,
                    draw,
                    shape,
                    large=GROWTH_TO[shape],
                    budget=timing.budget,
                    retries=timing.retries,
                    rounds=timing.rounds,
                    repeat=CPU_REPEAT,
                    tolerance=settings.tolerance("float32"),
                )
            except Exception as error:  # noqa: BLE001 - a timed call that failed fails the check
                return firsts, True, f"error: {str(error)[:60]}"
            firsts.append(found)  # the measurement that decided: the ratio, or the growth (found.large set)
            if found.wrong:
                return firsts, True, "wrong answer"
            if not passed:
                failed, why = True, why or f"slow at {shape}"
        return firsts, failed, why


def spread(values: list[float]) -> str:
    return f"{min(values):5.1f} {statistics.median(values):5.1f} {max(values):5.1f}" if values else "    -     -     -"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--busy", type=int, default=2, help="busy processes competing for the CPUs")
    parser.add_argument("--graders", type=int, default=0, help="other graders running beside the whole time")
    parser.add_argument("--only", default="", help="comma-separated variant names")
    options = parser.parse_args()
    names = [n for n in HONEST + LOOPS if not options.only or n in options.only.split(",")]
    settings = load_settings()
    budget = settings.timing.budget
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(options.busy)]
    busy += [
        subprocess.Popen(
            [sys.executable, "-c", GRADER_LOOP, str(Path(sys.executable).with_name("sdpa-grade")), str(REFERENCE)],
            start_new_session=True,
        )
        for _ in range(options.graders)
    ]
    zygote = Zygote()
    rows = {}
    try:
        zygote.wait_ready()
        with tempfile.TemporaryDirectory() as folder:
            for name in names:
                path = submission(name, Path(folder))
                start = time.perf_counter()
                runs = [one_run(path, settings, zygote) for _ in range(options.runs)]
                rows[name] = (runs, time.perf_counter() - start)
                print(
                    f"  ... {name}: {sum(r[1] for r in runs)} of {len(runs)} failed ({rows[name][1]:.0f} s); CPU ratios"
                    f" per run and shape: {[[round(m.cpu_ratio, 1) for m in r[0]] for r in runs]}",
                    file=sys.stderr,
                    flush=True,
                )
    finally:
        for process in busy:
            if process.args[2] == GRADER_LOOP:  # its session: the loop and the grader it runs now
                os.killpg(process.pid, signal.SIGKILL)
            else:
                process.kill()
            process.wait()
        zygote.close()
    shapes = "  ".join(f"{'x'.join(map(str, s)):>17}" for s in CPU_SHAPES)
    print(
        f"{options.runs} runs per variant, {options.busy} busy processes and {options.graders} other graders competing;"
        f" budget {budget:g} (CPU ratio),"
        f" {WALL_SLACK * budget:g} (wall ratio); each cell: CPU ratio min median max over runs"
    )
    print(f"{'variant':<30} {shapes}  {'max wall':>9}  failed")
    worst_honest, best_loop = 0.0, float("inf")
    for name, (runs, _) in rows.items():
        cells = []
        for index in range(len(CPU_SHAPES)):
            cells.append(spread([r[0][index].cpu_ratio for r in runs if len(r[0]) > index]))
        per_run = [max(m.cpu_ratio for m in r[0]) for r in runs if r[0]]
        walls = [max(m.wall_ratio for m in r[0]) for r in runs if r[0]]
        fails = sum(r[1] for r in runs)
        reasons = sorted({r[2] for r in runs if r[1]})
        if name in HONEST:
            worst_honest = max([worst_honest, *per_run])
        elif per_run and all(not m.wrong for r in runs for m in r[0]):
            best_loop = min([best_loop, *per_run])
        print(
            f"{name:<30} {'  '.join(f'{c:>17}' for c in cells)}  {max(walls, default=0):9.1f}  {fails}/{len(runs)}"
            f" {'; '.join(reasons)[:60]}"
        )
    print(
        f"worst honest run (CPU ratio, worst shape): {worst_honest:.2f}"
        f" = budget / {budget / max(worst_honest, 1e-9):.1f}"
    )
    print(
        f"best loop run (CPU ratio, worst shape, timed answers right): {best_loop:.2f}"
        f" = budget x {best_loop / budget:.1f}"
    )


if __name__ == "__main__":
    main()
