"""The optional blockwise part's named mistakes on many seeds: the checks each loses, always or on some seeds.

    PYTHONPATH=. .venv/bin/python bench/blockwise_mistakes.py [--seeds 50] [--jobs 2] [--only NAME,...]

Each submission of tests/blockwise_mistakes.py (``MISTAKES``, and ``edge_blockwise_query_slices``) is graded with the
part on, its checks in this process (the memory check's measure included), on seeds 0 to N-1; every seed must hold
what the tests hold on a few (``holds``: the checks it always loses lost, no others than those it may lose, its
mistake named and never another): a seed that does not is listed, with what it broke. Prints a Markdown table for
docs/grading.md: per submission, the checks lost on every seed, those lost on some seeds with how many, and the
seeds that differed from what the tests hold.
"""

from __future__ import annotations

import argparse
import collections
import os
import time
from concurrent.futures import ProcessPoolExecutor

from tests.blockwise_mistakes import MISTAKES, graded, holds

EDGE = "edge_blockwise_query_slices"  # no named mistake: a crash on one pairing of mask and block size


def _one(name: str, seed: int) -> tuple[set[str], str]:
    """The checks ``name`` loses at ``seed``, and what it broke of what the tests hold there ("" if nothing)."""
    found = graded(name, seed)
    broken = ""
    if name in MISTAKES:
        try:
            holds(name, seed, found)
        except AssertionError as error:
            broken = repr(error.args[0] if error.args else error)
    return {check for check, (points, _, _) in found.items() if points}, broken


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--only", default="", help="comma-separated submission names")
    options = parser.parse_args()
    names = [name for name in [*sorted(MISTAKES), EDGE] if not options.only or name in options.only.split(",")]
    started = time.perf_counter()
    load = " ".join(f"{value:.1f}" for value in os.getloadavg())
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"{when}, {options.seeds} seeds each (0 to {options.seeds - 1}),")
    print(f"the part's checks in this process, {options.jobs} jobs, load {load}")
    print("| submission | always lost | lost on some seeds | seeds that differed |")
    print("|---|---|---|---|")
    with ProcessPoolExecutor(options.jobs) as pool:
        for name in names:
            results = list(pool.map(_one, [name] * options.seeds, range(options.seeds)))
            counts = collections.Counter(check for lost, _ in results for check in lost)
            always = sorted(check for check, count in counts.items() if count == options.seeds)
            some = sorted((check, count) for check, count in counts.items() if count < options.seeds)
            shown = ", ".join(f"{check} ({count}/{options.seeds})" for check, count in some) or "none"
            off = "; ".join(f"{seed}: {broken}" for seed, (_, broken) in enumerate(results) if broken) or "none"
            print(f"| `{name}` | {', '.join(always) or 'none'} | {shown} | {off} |", flush=True)
    load = " ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"\n{options.seeds} seeds, {time.perf_counter() - started:.0f} s wall, load {load}")


if __name__ == "__main__":
    main()
