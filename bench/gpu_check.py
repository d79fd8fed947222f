"""The GPU checks, as one short script for a machine with a CUDA device.

    .venv/bin/python bench/gpu_check.py

Prints: the device; the CUDA timing check's outcome for the reference and for a loop over
query positions (graded with `sdpa-grade --device cuda`); the student/reference time ratios
behind it at B=32, H=8, T=1024, d=64 in float16 and float32 (median of 7 interleaved rounds);
and the wall time of one grading on the GPU machine. Exits 2 at once without CUDA.
"""

from __future__ import annotations

import json
import statistics
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
        subprocess.run([str(BIN / "sdpa-grade"), str(path), "--device", "cuda", "--json", str(out)], check=True,
                       capture_output=True)
        wall = time.perf_counter() - start
        tests = {t["name"].split(": ")[1]: t for t in json.loads(out.read_text())["tests"]}
    return tests, wall


def ratios(path: Path) -> dict[str, float]:
    """Median student/reference time ratio per dtype, measured as the hidden check measures it."""
    from autograder.checks.test_5_integrity_timing import _cuda_seconds, _randn_spec
    from autograder.config import load_settings
    from autograder.sandbox.runner import Sandbox
    from autograder.checks.student import Student

    settings = load_settings()
    found = {}
    with Sandbox.starting(path, settings["limits"], device="cuda") as sandbox:
        sandbox.load()
        student = Student(sandbox, timeout=120)
        for dtype in (torch.float16, torch.float32):
            pairs = [_randn_spec((32, 8, 1024, 64), dtype, seed, "cuda") for seed in (1, 2, 3)]
            specs, local = [p[0] for p in pairs], [p[1] for p in pairs]
            student.time("scaled_dot_product_attention", *specs, repeat=1)
            _cuda_seconds(local, 1)
            rounds = [student.time("scaled_dot_product_attention", *specs, repeat=10) / _cuda_seconds(local, 10)
                      for _ in range(7)]
            found[str(dtype).removeprefix("torch.")] = statistics.median(rounds)
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
            print(f"{label}: timing_gpu {check['score']:g}/{check['max_score']:g} ({check['output'][:120]}); "
                  f"total {sum(t['score'] for t in tests.values()):g}; graded in {wall:.1f} s")
            print(f"  student/reference time ratio: "
                  + ", ".join(f"{dtype} {ratio:.2f}" for dtype, ratio in ratios(path).items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
