"""Print how reliable the CPU timing check is: false fails on a correct submission while another
process keeps one core busy, and how often a loop over query positions is caught.

    .venv/bin/python bench/timing_reliability.py [--runs 30]

Each run grades the checks of scaled_dot_product_attention (timing included) with fresh inputs.
"""

from __future__ import annotations

import argparse
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from autograder.config import load_settings
from autograder.grade import run_pytest
from autograder.plugin import GradingPlugin
from autograder.sandbox.runner import Sandbox, Zygote

ROOT = Path(__file__).resolve().parent.parent
LOOP = ROOT / "tests" / "submissions" / "overlays" / "mistake_loop_over_queries.py"


def timing_outcomes(submission: Path, runs: int, zygote: Zygote) -> list[str]:
    settings = load_settings()
    statuses = []
    for _ in range(runs):
        sandbox = Sandbox.starting(submission, settings["limits"], zygote)

        def connect(box=sandbox):
            box.load()
            return box

        plugin = GradingPlugin(connect, settings, secrets.randbits(62), "cpu", only_function="scaled_dot_product_attention")
        try:
            run_pytest(plugin, settings)
        finally:
            sandbox.close()
        statuses.append(plugin.outcomes["timing_cpu"].status)
    return statuses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=30)
    runs = parser.parse_args().runs
    reference = ROOT / "reference" / "attention.py"
    with tempfile.TemporaryDirectory() as folder:
        loop = Path(folder) / "attention.py"
        loop.write_text(reference.read_text() + "\n" + LOOP.read_text())
        busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])  # keeps one of the cores busy
        zygote = Zygote()
        zygote.wait_ready()
        try:
            start = time.perf_counter()
            correct = timing_outcomes(reference, runs, zygote)
            middle = time.perf_counter()
            looping = timing_outcomes(loop, runs, zygote)
            end = time.perf_counter()
        finally:
            busy.kill()
            zygote.close()
    print(f"with one core kept busy by another process, {runs} runs each:")
    print(f"  correct submission: {correct.count('failed')} false fails of {runs} ({middle - start:.0f} s)")
    print(f"  loop over query positions: caught {looping.count('failed')} of {runs} ({end - middle:.0f} s)")


if __name__ == "__main__":
    main()
