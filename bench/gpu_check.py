"""The GPU checks, as one short script for a machine with a CUDA device.

    .venv/bin/python bench/gpu_check.py

Prints: the device; the CUDA timing check's outcome for the reference and for a loop over
query positions (graded with `sdpa-grade grade --device cuda`); the student/reference time ratios
behind it on the GPU shapes of autograder/checks/timing.py (median of 7 interleaved rounds);
and the wall time of one grading on the GPU machine. Exits 2 at once without CUDA.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
LOOP = ROOT / "tests" / "submissions" / "overlays" / "mistake_loop_over_queries.py"


def graded(path: Path) -> tuple[dict, float]:
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "results.json"
        start = time.perf_counter()
        subprocess.run(
            [str(BIN / "sdpa-grade"), "grade", str(path), "--device", "cuda", "--json", str(out)],
            check=True,
            capture_output=True,
        )
        wall = time.perf_counter() - start
        tests = {t["name"].split(": ")[1]: t for t in json.loads(out.read_text())["tests"]}
    return tests, wall


def ratios(path: Path) -> dict[str, float]:
    """Median student/reference wall-clock ratio per GPU shape, measured as the hidden check measures it."""
    from autograder.checks.cases import Draw
    from autograder.checks.student import Reference, Student
    from autograder.checks.timing import GPU_REPEAT, GPU_SHAPES, measure
    from autograder.config import load_settings
    from autograder.sandbox.client import Sandbox

    settings = load_settings()
    found = {}
    limits = dataclasses.asdict(settings.limits)
    with (
        Sandbox(path, limits, device="cuda") as student_box,
        Sandbox(ROOT / "reference" / "attention.py", limits, device="cuda") as reference_box,
    ):
        student_box.load()
        reference_box.load()
        student, reference = Student(student_box, timeout=120), Reference(reference_box, timeout=120)
        for shape in GPU_SHAPES:
            result = measure(
                student,
                reference,
                Draw(1),
                shape,
                rounds=7,
                repeat=GPU_REPEAT,
                tolerance=settings.tolerance("float32"),
                device="cuda",
            )
            found["x".join(map(str, shape))] = result.wall_ratio
    return found


def main() -> int:
    if not torch.cuda.is_available():
        print("no CUDA device here: nothing to check")
        return 2
    print(f"device: {torch.cuda.get_device_name()} (torch {torch.__version__})")
    reference = ROOT / "reference" / "attention.py"
    with tempfile.TemporaryDirectory() as folder:
        loop = Path(folder) / "attention.py"
        loop.write_text(reference.read_text() + "\n" + LOOP.read_text())
        for label, path in (("reference", reference), ("loop over queries", loop)):
            tests, wall = graded(path)
            check = tests["timing_gpu"]
            print(
                f"{label}: timing_gpu {check['score']:g}/{check['max_score']:g} ({check['output'][:120]}); "
                f"total {sum(t['score'] for t in tests.values()):g}; graded in {wall:.1f} s"
            )
            print(
                "  student/reference time ratio: "
                + ", ".join(f"{shape} {ratio:.2f}" for shape, ratio in ratios(path).items())
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
