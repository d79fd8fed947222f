"""Print every value check whose verdict on a submission depends on the seed, over many seeds, in this process.

    PYTHONPATH=. .venv/bin/python bench/every_draw.py [--seeds N] [--only NAME ...] [--checks CHECK ...] [--verbose]
        [--part K/N]

A known-wrong idiom must be caught on every draw, and a correct one pass on every draw. Each overlay
under tests/submissions/overlays (that is plain code: no attack on the grader, no hang) and each of
bench/variants.py's variants is loaded in this process behind the checks' proxy (tests/in_process.py),
and every value check runs on seeds 1..N, each check's inputs derived from the seed as a grading
derives them (the mask checks too: causal_mask and padding_mask). A check that passes on some seeds and fails
on others is printed with its counts; so is a correct submission (correct_*, bench/variants.py's CORRECT) that
fails any check on any seed and, when every check runs, a wrong one that passes every check on some seed (its
mistake left to the draw, or caught only by a check that is not a value check: mutation, timing). The last line
says how many of each. Exits 1 if any. ``--part K/N`` takes every N-th submission from the K-th: N processes
share the work.
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
from bench.tolerances import MODULES, VALUE_CHECKS, load_variant
from bench.variants import CORRECT, WRONG

ROOT = Path(__file__).resolve().parent.parent
PLAIN = ("mistake_", "correct_", "edge_", "misattr_", "precision_")  # overlays that are code, not attacks
SKIP = ("mistake_loop_",)  # a loop costs time only: no value check sees it
MASK_CHECKS = ("causal_square", "causal_rectangular", "padding_lengths")  # exact, so no tolerance to measure


def checks(only) -> dict:
    """The value checks (bench/tolerances.py's) and the mask checks, by name: ``only`` these, if given."""
    names = [name for name in (*VALUE_CHECKS, *MASK_CHECKS) if not only or name in only]
    found = {
        name: getattr(module, f"test_{name}") for module in MODULES for name in names if hasattr(module, f"test_{name}")
    }
    return {name: found[name] for name in names if name in found}


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
    parser.add_argument("--part", default="1/1", help="K/N: every N-th submission from the K-th (N processes at once)")
    options = parser.parse_args()
    part, parts = (int(x) for x in options.part.split("/"))
    settings = load_settings()
    reference = (ROOT / "reference" / "attention.py").read_text()
    started = time.perf_counter()
    dependent = pairs = 0
    seeds = range(1, options.seeds + 1)
    # correct code must pass every check on every seed; wrong code, with every value check run, fail one on every seed
    unfair: list[str] = []
    for name, code in list(submissions(options.only).items())[part - 1 :: parts]:
        loaded = load_variant(reference, code)
        clean = set(seeds)  # the seeds on which every check passed
        for check_name, check in checks(options.checks).items():
            passing = {seed for seed in seeds if verdict(check, check_name, loaded, seed, settings)}
            clean &= passing
            pairs += 1
            if 0 < len(passing) < options.seeds:
                dependent += 1
                print(f"{name}: {check_name} passes on {len(passing)} of {options.seeds} seeds", flush=True)
            elif options.verbose:
                print(f"{name}: {check_name} {'passes' if passing else 'fails'} on every seed", flush=True)
        variant = name.removeprefix("variants.")
        correct = name.startswith("correct_") or (variant != name and variant in CORRECT)
        if correct and len(clean) < options.seeds:
            unfair.append(f"{name}: correct, fails a check on {options.seeds - len(clean)} of {options.seeds} seeds")
        elif not correct and clean and not options.checks:
            unfair.append(f"{name}: wrong, passes every value check on {len(clean)} of {options.seeds} seeds")
    elapsed = time.perf_counter() - started
    for line in unfair:
        print(line, flush=True)
    print(
        f"{pairs} (submission, check) pairs x {options.seeds} seeds, {elapsed:.0f} s: {dependent} seed-dependent;"
        f" {len(unfair)} submission(s) correct but failing, or wrong but passing every value check"
        + (" (wrong ones not judged: --checks)" if options.checks else "")
    )
    return 1 if dependent or unfair else 0


if __name__ == "__main__":
    sys.exit(main())
