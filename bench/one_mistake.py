"""Each classic one-function mistake on many seeds: the checks it loses beyond its own function's.

    PYTHONPATH=. .venv/bin/python bench/one_mistake.py [--seeds N] [--jobs J]

The value checks run in this process (tests/one_mistake.py: integrity and timing taken as passed, so their
scoring is measured, not their measures); prints a Markdown table: per overlay, its function, the points it loses
(median over the seeds) and every seed on which it lost a check of another function, with those checks.
"""

from __future__ import annotations

import argparse
import statistics
import time
from concurrent.futures import ProcessPoolExecutor

from tests.one_mistake import ONE_FUNCTION, lost, own_checks


def _one(overlay: str, seed: int) -> tuple[float, set[str]]:
    points = lost(overlay, seed)
    return sum(points.values()), set(points) - own_checks(ONE_FUNCTION[overlay])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument("--jobs", type=int, default=2)
    options = parser.parse_args()
    started = time.perf_counter()
    print("| submission | function | points lost (median) | seeds losing another function's check |")
    print("|---|---|---|---|")
    with ProcessPoolExecutor(options.jobs) as pool:
        for overlay in sorted(ONE_FUNCTION):
            results = list(pool.map(_one, [overlay] * options.seeds, range(options.seeds)))
            beyond = {seed: sorted(extra) for seed, (_, extra) in enumerate(results) if extra}
            median = statistics.median(points for points, _ in results)
            shown = "; ".join(f"{seed}: {', '.join(checks)}" for seed, checks in beyond.items()) or "none"
            print(f"| {overlay} | {ONE_FUNCTION[overlay]} | {median:g} | {shown} |", flush=True)
    print(f"\n{options.seeds} seeds, {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
