"""The optional blockwise part's named mistakes on many seeds: the checks each loses, always or on some seeds.

    PYTHONPATH=. .venv/bin/python bench/blockwise_mistakes.py [--seeds 50] [--only NAME,...]

Each submission of tests/blockwise_mistakes.py (``MISTAKES``, and ``edge_blockwise_query_slices``) is graded with the
part on, its checks in this process (the memory check's measure included), on seeds 0 to N-1; every seed must hold
what the tests hold on a few (``holds``: the checks it always loses lost, no others than those it may lose, its
mistake named and never another). Prints a Markdown table for docs/grading.md: per submission, the checks lost on
every seed, and those lost on some seeds with how many.
"""

from __future__ import annotations

import argparse
import collections
import time

from tests.blockwise_mistakes import MISTAKES, graded, holds

EDGE = "edge_blockwise_query_slices"  # no named mistake: a crash on one pairing of mask and block size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument("--only", default="", help="comma-separated submission names")
    options = parser.parse_args()
    names = [name for name in [*sorted(MISTAKES), EDGE] if not options.only or name in options.only.split(",")]
    rows = []
    for name in names:
        started, counts = time.process_time(), collections.Counter()
        for seed in range(options.seeds):
            if name in MISTAKES:
                holds(name, seed)  # raises (AssertionError, with the seed) where a seed breaks what the tests hold
            counts.update(check for check, (points, _, _) in graded(name, seed).items() if points)
        always = sorted(check for check, count in counts.items() if count == options.seeds)
        some = sorted((check, count) for check, count in counts.items() if count < options.seeds)
        rows.append((name, always, some, time.process_time() - started))
    print(f"{options.seeds} seeds each (0 to {options.seeds - 1}), the part's checks in this process")
    print("| submission | always lost | lost on some seeds | CPU-s |")
    print("|---|---|---|---|")
    for name, always, some, seconds in rows:
        shown = ", ".join(f"{check} ({count}/{options.seeds})" for check, count in some) or "none"
        print(f"| `{name}` | {', '.join(always) or 'none'} | {shown} | {seconds:.0f} |")


if __name__ == "__main__":
    main()
