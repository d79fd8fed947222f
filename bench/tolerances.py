"""Print the margins behind the grader's tolerances, per value check: honest errors below, wrong ones above.

    PYTHONPATH=. .venv/bin/python bench/tolerances.py [--seeds N] [--stability-seeds M] [--only CHECK ...]

Every value check of autograder/checks runs here, in this process, on its own inputs (seeds 1..N),
against submissions derived from the reference: bench/variants.py's CORRECT rewrites (the ways
students write the same math: float32 constants, a float32 softmax or logsumexp inside float64
work, Q scaled first...) and its WRONG ones (the classic mistakes, float16 and bfloat16 inside...).
Each comparison a check makes is measured as "x tol": its largest error divided by what the check
allows at that entry (the tolerances of autograder/defaults.toml, scaled as the check scales them);
a check's figure is the largest over its comparisons (a shape, dtype or NaN miss counts as inf).

Per check it prints the worst honest figure (largest over correct variants and seeds: must stay
<= 0.1) and the best wrong one (for each wrong variant the check catches, the smallest over seeds;
the smallest of those: must stay >= 10), and their ratio, the margin. softmax_stability is also run
on M more seeds (default 1000) for the precision variants: float32 inside must pass on every one,
float16 and bfloat16 inside must fail on every one. Exits 1 when any of that does not hold.
"""

from __future__ import annotations

import argparse
import importlib
import math
import sys
import time
import types
from pathlib import Path

import torch

from autograder.assignment.catalogue import catalogue
from autograder.checks.cases import Draw
from autograder.checks.expect import CheckFailure
from autograder.checks.student import Student, StudentFault
from autograder.config import load_settings
from bench.variants import CORRECT, WRONG
from tests.in_process import InProcess

ROOT = Path(__file__).resolve().parent.parent
# the value checks: those whose code compares values within settings.tolerance(...) (the catalogue reads it from their
# source), less the timing checks, which compare their answers too but judge time; and the modules that hold them
VALUE_CHECKS = tuple(entry.check for entry in catalogue() if entry.tolerance and entry.category != "timing")
MODULES = tuple(
    importlib.import_module(f"autograder.checks.{name}")
    for name in dict.fromkeys(entry.module for entry in catalogue() if entry.check in VALUE_CHECKS)
)
PRECISION = {
    "float32_softmax_inside": True,
    "float32_logsumexp_inside": True,
    "float16_softmax_inside": False,
    "bfloat16_softmax_inside": False,
}  # name -> must pass softmax_stability on every seed
HONEST_AT_MOST, WRONG_AT_LEAST = 0.1, 10.0


def x_tol(actual, expected, tolerance, dtype=None) -> float:
    """The largest error over what the tolerance allows at that entry;
    inf for a wrong type, shape, dtype, NaN or inf."""
    if not isinstance(actual, torch.Tensor) or tuple(actual.shape) != tuple(expected.shape):
        return math.inf
    if actual.dtype != (dtype or expected.dtype):
        return math.inf
    if actual.dtype == torch.bool:
        return 0.0 if bool((actual == expected).all()) else math.inf
    got, want = actual.detach().double(), expected.detach().double()
    if bool(((got.isnan() | got.isinf()) & want.isfinite()).any()):
        return math.inf
    atol, rtol = tolerance
    error = (got - want).abs().nan_to_num(0.0)
    return float((error / (atol + rtol * want.abs().nan_to_num(0.0))).max()) if error.numel() else 0.0


def measure(check, loaded, seed, settings) -> float:
    """Run one check on one seed; its largest x tol over the comparisons it makes (inf if it fails otherwise)."""
    figures = []

    def recording(actual, expected, *, what, tolerance, variants=None, dtype=None, scale=0.0):
        figures.append(x_tol(actual, expected, tolerance, dtype))

    saved = [module.expect_tensor for module in MODULES]
    for module in MODULES:
        module.expect_tensor = recording
    try:
        check(loaded, Draw(seed), settings)
    except (CheckFailure, StudentFault, RuntimeError, TypeError, ValueError, IndexError):
        figures.append(math.inf)
    finally:
        for module, original in zip(MODULES, saved):
            module.expect_tensor = original
    return max(figures, default=0.0)


def load_variant(reference: str, code: str) -> Student:
    """The reference with a variant's lines appended, loaded in this process behind the checks' proxy."""
    module = types.ModuleType("attention")
    exec(compile(f"{reference}\n{code}", "attention.py", "exec"), module.__dict__)  # noqa: S102 - our own variants
    return Student(InProcess(vars(module)), timeout=60.0)


def checks(only) -> dict:
    found = {}
    for module in MODULES:
        for name in VALUE_CHECKS:
            function = getattr(module, f"test_{name}", None)
            if function is not None and (not only or name in only):
                found[name] = function
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20, help="seeds per check and variant (default 20)")
    parser.add_argument(
        "--stability-seeds", type=int, default=1000, help="extra seeds of softmax_stability (default 1000)"
    )
    parser.add_argument("--only", nargs="*", help="only these checks")
    options = parser.parse_args()
    torch.set_num_threads(1)
    settings = load_settings()
    reference = (ROOT / "reference" / "attention.py").read_text()
    variants = {name: (code, True) for name, code in CORRECT.items()} | {
        name: (code, False) for name, code in WRONG.items()
    }
    loaded = {name: load_variant(reference, code) for name, (code, _) in variants.items()}
    selected = checks(options.only)
    start = time.perf_counter()
    problems = 0
    print(
        f"{len(selected)} value checks x {len(variants)} variants x {options.seeds} seeds;"
        f" x tol = largest error / what the check allows there"
        f" (<= {HONEST_AT_MOST} honest, >= {WRONG_AT_LEAST:g} wrong)"
    )
    print(
        f"\n{'check':22s} {'worst honest (variant)':34s} {'x tol':>8s}"
        f"   {'best wrong (variant)':30s} {'x tol':>8s} {'margin':>8s}"
    )
    for check_name, check in selected.items():
        honest, wrong = (-1.0, "-"), (math.inf, "-")
        for name, (_, correct) in variants.items():
            figures = [measure(check, loaded[name], seed, settings) for seed in range(1, options.seeds + 1)]
            if correct and max(figures) > honest[0]:
                honest = (max(figures), name)
            elif not correct and max(figures) > 1 and (min(figures) < wrong[0] or wrong[1] == "-"):
                wrong = (min(figures), name)  # a wrong variant this check catches: its closest call
        margin = wrong[0] / honest[0] if honest[0] else math.inf
        bad = honest[0] > HONEST_AT_MOST or wrong[0] < WRONG_AT_LEAST
        problems += bad
        print(
            f"{check_name:22s} {honest[1]:34s} {honest[0]:8.2g}   {wrong[1]:30s} {wrong[0]:8.3g} {margin:8.3g}"
            f"{'   <- PROBLEM' if bad else ''}",
            flush=True,
        )
    if options.stability_seeds and (not options.only or "softmax_stability" in options.only):
        print(f"\nsoftmax_stability on seeds 1..{options.stability_seeds}, precision variants:")
        stability = checks(["softmax_stability"])["softmax_stability"]
        for name, must_pass in PRECISION.items():
            figures = [
                measure(stability, loaded[name], seed, settings) for seed in range(1, options.stability_seeds + 1)
            ]
            passed = sum(figure <= 1 for figure in figures)
            bad = passed != (len(figures) if must_pass else 0)
            problems += bad
            print(
                f"  {name:28s} passes {passed:5d} of {len(figures)};"
                f" x tol from {min(figures):.3g} to {max(figures):.3g}"
                f"{'   <- PROBLEM' if bad else ''}",
                flush=True,
            )
    print(f"\n{time.perf_counter() - start:.0f} s; {problems} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
