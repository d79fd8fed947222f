"""The optional decoding part's named mistakes on many seeds, with the part on: what each loses and where it is named.

    PYTHONPATH=. .venv/bin/python bench/decoding_mistakes.py [--seeds N] [--jobs J] [--until HH:MM]

The part's checks run in this process (tests/decoding_cases.py, as tests/checks/test_decoding_mistakes.py runs them on a
few seeds). Prints a Markdown table (docs/grading.md, "The optional decoding part"): per submission, the checks it
lost (on how many seeds), the checks whose feedback named its mistake with its sentence (on how many), the points
lost (median), and the seeds on which anything differed from tests/decoding_cases.py's MISTAKES.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor

from bench.one_mistake import load, until_time
from tests.decoding_cases import MISTAKES, graded, mistake, problems, sentence


def _one(overlay: str | None, seed: int) -> tuple[float, set[str], set[str], list[str]]:
    found = graded(overlay, seed)
    lost = {check for check, (points, _, _) in found.items() if points}
    named = {
        check
        for check, (_, name, feedback) in found.items()
        if overlay and name == mistake(overlay) and sentence(overlay) in feedback
    }
    wrong = problems(overlay, found) if overlay else sorted(lost)
    return sum(points for points, _, _ in found.values()), lost, named, wrong


def _counted(counter: Counter, seeds: int) -> str:
    return ", ".join(f"{check} ({count}/{seeds})" for check, count in sorted(counter.items())) or "none"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--until", help="HH:MM UTC: start no seed after it (the table holds the seeds done)")
    options = parser.parse_args()
    started, until = time.perf_counter(), until_time(options.until)
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load {load()}", flush=True)
    overlays = [None, *sorted(MISTAKES)]
    found: dict[str | None, list] = {overlay: [] for overlay in overlays}
    with ProcessPoolExecutor(options.jobs) as pool:
        for seed in range(options.seeds):
            if seed and until is not None and time.time() > until:  # one seed at least
                break
            for overlay, result in zip(overlays, pool.map(_one, overlays, [seed] * len(overlays))):
                found[overlay].append(result)
            print(f"seed {seed} done, {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    seeds = len(found[None])
    print("| submission | checks lost (seeds) | named, with its sentence (seeds) | points lost (median) | seeds off |")
    print("|---|---|---|---|---|")
    for overlay, results in found.items():
        lost = Counter(check for _, checks, _, _ in results for check in checks)
        named = Counter(check for _, _, checks, _ in results for check in checks)
        off = "; ".join(f"{seed}: {', '.join(said)}" for seed, (*_, said) in enumerate(results) if said) or "none"
        median = statistics.median(points for points, *_ in results)
        print(f"| {overlay or 'reference'} | {_counted(lost, seeds)} | {_counted(named, seeds)} | {median:g} | {off} |")
    print(f"\n{seeds} seeds (0 to {seeds - 1}), {time.perf_counter() - started:.0f} s wall, load {load()}")


if __name__ == "__main__":
    main()
