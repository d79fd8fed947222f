"""Grade every correct real-code submission many times beside busy processes: does timing_cpu ever fail one?

    .venv/bin/python -u bench/timing_false_fails.py [--runs 20] [--loop-runs 2] [--busy 2] [--only NAME,...]

The submissions: the reference, and every overlay of tests/submissions (``correct_*`` and ``honest/``) and
bench/variants that redefines scaled_dot_product_attention or a function it builds on, appended to the reference
as the project's tests grade them; then the loops (``mistake_loop_*``, bench/variants' ``loop_*``), which must
still fail. Each is graded whole (``grade.grade``, every check, as a batch's grading runs them: one zygote for the
bench), ``--runs`` times for the correct ones and ``--loop-runs`` for the loops, while ``--busy`` processes
(``python -c 'while True: pass'``) compete for the CPUs from start to end. Prints one row per submission: how many
gradings lost timing_cpu, the scores seen, and the first failure's words. Paste the table into
docs/performance.md.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from autograder import grade
from autograder.config import load_settings
from autograder.sandbox.zygote import Zygote

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "reference" / "attention.py"
SUBMISSIONS = ROOT / "tests" / "submissions"
VARIANTS = Path(__file__).resolve().parent / "variants"
# an overlay that redefines one of these changes what timing_cpu times
TIMED = re.compile(
    r"^def (attention_scores|scale_scores|causal_mask|masked_softmax|attention_output|scaled_dot_product_attention)\b",
    re.MULTILINE,
)


def correct() -> list[Path]:
    """The reference and every correct overlay that changes what is timed."""
    found = [*SUBMISSIONS.glob("overlays/correct_*.py"), *SUBMISSIONS.glob("honest/*.py"), *VARIANTS.glob("correct_*")]
    return [REFERENCE, *sorted(path for path in found if TIMED.search(path.read_text()))]


def loops() -> list[Path]:
    return sorted([*SUBMISSIONS.glob("overlays/mistake_loop_*.py"), *VARIANTS.glob("loop_*.py")])


def name(path: Path) -> str:
    return "reference" if path == REFERENCE else f"{path.parent.name}/{path.stem}"


def graded_file(path: Path, folder: Path) -> Path:
    """The reference itself, or the reference with the overlay appended."""
    if path == REFERENCE:
        return REFERENCE
    target = folder / name(path).replace("/", "__") / "attention.py"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(f"{REFERENCE.read_text()}\n\n{path.read_text()}")
    return target


def timing_of(result: dict) -> dict:
    return next(test for test in result["tests"] if test["extra_data"]["check"] == "timing_cpu")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20, help="gradings of each correct submission")
    parser.add_argument("--loop-runs", type=int, default=2, help="gradings of each loop")
    parser.add_argument("--busy", type=int, default=2, help="busy processes competing for the CPUs")
    parser.add_argument("--only", default="", help="comma-separated names (as printed)")
    options = parser.parse_args()
    wanted = [(path, options.runs, True) for path in correct()] + [(path, options.loop_runs, False) for path in loops()]
    wanted = [entry for entry in wanted if not options.only or name(entry[0]) in options.only.split(",")]
    settings = load_settings()
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(options.busy)]
    rows = []
    zygote = Zygote()
    try:
        zygote.wait_ready()
        grade.warm_up(settings)
        with tempfile.TemporaryDirectory() as folder:
            for path, runs, honest in wanted:
                submission = graded_file(path, Path(folder))
                start, fails, scores, said = time.perf_counter(), 0, [], ""
                for _ in range(runs):
                    result = grade.grade(submission, settings, zygote=zygote).result
                    timing = timing_of(result)
                    scores.append(result["score"])
                    if timing["score"] < timing["max_score"]:
                        fails += 1
                        said = said or timing["output"].splitlines()[0][:150]
                seconds = time.perf_counter() - start
                rows.append((name(path), honest, fails, runs, min(scores), max(scores), seconds / runs, said))
                print(f"  ... {rows[-1]}", file=sys.stderr, flush=True)
    finally:
        for process in busy:
            process.kill()
            process.wait()
        zygote.close()
    print(f"{options.busy} busy processes beside every grading; budget {settings.timing.budget:g}")
    print("| submission | kind | timing_cpu failed | scores | s per grading | first failure |")
    print("|---|---|---|---|---|---|")
    for label, honest, fails, runs, low, high, seconds, said in rows:
        kind = "correct" if honest else "loop"
        scores = f"{low:g}" if low == high else f"{low:g}-{high:g}"
        print(f"| `{label}` | {kind} | {fails}/{runs} | {scores} | {seconds:.1f} | {said.replace('|', '/')} |")


if __name__ == "__main__":
    main()
