"""Print every value check whose verdict on a submission depends on the seed, over many seeds, in this process.

    PYTHONPATH=. .venv/bin/python bench/every_draw.py [--seeds N] [--only NAME ...] [--checks CHECK ...] [--verbose]

A known-wrong idiom must be caught on every draw, and a correct one pass on every draw. Each overlay
under tests/submissions/overlays (that is plain code: no attack on the grader, no hang) and each of
bench/variants.py's variants is loaded in this process behind the checks' proxy (tests/in_process.py),
and every value check runs on seeds 1..N, each check's inputs derived from the seed as a grading
derives them. A check that passes on some seeds and fails on others is printed with its counts; the
last line says how many (submission, check) pairs were seed-dependent. Exits 1 if any was.
"""

from __future__ import annotations

import argparse
import sys
import time
import zlib
from pathlib import Path

from autograder.checks.cases import Draw
from autograder.checks.expect import CheckFailure
from autograder.checks.student import StudentFault
from autograder.config import load_settings
from bench.tolerances import checks, load_variant
from bench.variants import CORRECT, WRONG

ROOT = Path(__file__).resolve().parent.parent
PLAIN = ("mistake_", "correct_", "edge_", "misattr_", "precision_")  # overlays that are code, not attacks
SKIP = ("mistake_loop_",)  # a loop costs time only: no value check sees it


def verdict(check, name: str, loaded, seed: int, settings) -> bool:
    """True when the check passes on this seed (its inputs drawn as a grading with this seed draws them)."""
    try:
        check(loaded, Draw(seed ^ zlib.crc32(f"test_{name}".encode())), settings)
    except (CheckFailure, StudentFault, RuntimeError, TypeError, ValueError, IndexError):
        return False
    return True


def submissions(only) -> dict[str, str]:
    found = {
        path.stem: path.read_text()
        for path in sorted((ROOT / "tests" / "submissions" / "overlays").glob("*.py"))
        if path.stem.startswith(PLAIN) and not path.stem.startswith(SKIP)
    }
    found |= {f"variants.{name}": code for name, code in {**CORRECT, **WRONG}.items()}
    return {name: code for name, code in found.items() if not only or name in only}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument("--only", nargs="*", help="these submissions only (overlay names, or variants.NAME)")
    parser.add_argument("--checks", nargs="*", help="these value checks only")
    parser.add_argument("--verbose", action="store_true", help="print the verdicts that hold on every seed too")
    options = parser.parse_args()
    settings = load_settings()
    reference = (ROOT / "reference" / "attention.py").read_text()
    started = time.perf_counter()
    dependent = pairs = 0
    for name, code in submissions(options.only).items():
        loaded = load_variant(reference, code)
        for check_name, check in checks(options.checks).items():
            passed = sum(verdict(check, check_name, loaded, seed, settings) for seed in range(1, options.seeds + 1))
            pairs += 1
            if 0 < passed < options.seeds:
                dependent += 1
                print(f"{name}: {check_name} passes on {passed} of {options.seeds} seeds", flush=True)
            elif options.verbose:
                print(f"{name}: {check_name} {'passes' if passed else 'fails'} on every seed", flush=True)
    elapsed = time.perf_counter() - started
    print(f"{pairs} (submission, check) pairs x {options.seeds} seeds, {elapsed:.0f} s: {dependent} seed-dependent")
    return 1 if dependent else 0


if __name__ == "__main__":
    sys.exit(main())
