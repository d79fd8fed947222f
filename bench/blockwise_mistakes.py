"""The optional blockwise part's named mistakes on many seeds: the checks each loses, always or on some seeds.

    PYTHONPATH=. .venv/bin/python bench/blockwise_mistakes.py [--seeds 50] [--first 0] [--jobs 2] [--only NAME,...]
        [--until HH:MM]

Each submission of tests/blockwise_mistakes.py (``MISTAKES``, ``edge_blockwise_query_slices``, and ``CARRIED``: two
built on a wrong ``scale_scores``, which must lose its check alone) is graded with the part on, its checks in this
process (the memory check's measure included), on seeds F to F+N-1 (F: ``--first``, 0 unless given); every seed
must hold what the tests hold on a few (``holds``: the checks it always loses lost, no others than those it may lose,
its mistake named and never another): a seed that does not is listed, with what it broke. Prints a Markdown table for
docs/grading.md: per submission, the checks lost on every seed, those lost on some seeds with how many, and the
seeds that differed from what the tests hold.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from concurrent.futures import ProcessPoolExecutor

from bench.one_mistake import load, until_time
from tests.blockwise_mistakes import MISTAKES, graded, holds

EDGE = "edge_blockwise_query_slices"  # no named mistake: a crash on one pairing of mask and block size
# a blockwise_attention built on the student's own wrong scale_scores -> the one check it may lose: scale_scores' own
# (the part's checks carried, as tests/checks/test_blockwise_mistakes.py holds on a seed)
CARRIED = {"mistake_blockwise_reuses_wrong_scale": "scale_values", "mistake_blockwise_dtype_slip": "scale_values"}


def _one(name: str, seed: int) -> tuple[set[str], str]:
    """The checks ``name`` loses at ``seed``, and what it broke of what the tests hold there ("" if nothing)."""
    found = graded(name, seed, "blockwise or scale_values" if name in CARRIED else "blockwise")
    broken = ""
    lost = {check for check, (points, _, _) in found.items() if points}
    if name in CARRIED and lost != {CARRIED[name]}:
        broken = f"lost {sorted(lost)}, expected {CARRIED[name]} alone"
    if name in MISTAKES:
        try:
            holds(name, seed, found)
        except AssertionError as error:
            broken = repr(error.args[0] if error.args else error)
    if broken:  # what each check it may not lose said (a grader's error says why: a machine too busy, say)
        expected = MISTAKES[name][0] | MISTAKES[name][1] if name in MISTAKES else {CARRIED.get(name)}
        said = [f"{check}: {found[check][2][:200]!r}" for check in sorted(lost - expected)]
        broken = "; ".join([broken, *said])
    return lost, broken


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument("--first", type=int, default=0, help="the first seed (a run that finishes another's)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--only", default="", help="comma-separated submission names")
    parser.add_argument("--until", help="HH:MM UTC: start no seed after it (the table holds the seeds done)")
    options = parser.parse_args()
    known = [*sorted(MISTAKES), EDGE, *sorted(CARRIED)]
    names = [name for name in known if not options.only or name in options.only.split(",")]
    started, until = time.perf_counter(), until_time(options.until)
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {options.jobs} jobs, load {load()}", flush=True)
    found: dict[str, list] = {name: [] for name in names}
    with ProcessPoolExecutor(options.jobs) as pool:
        for seed in range(options.first, options.first + options.seeds):
            if seed > options.first and until is not None and time.time() > until:  # one seed at least
                break
            for name, result in zip(names, pool.map(_one, names, [seed] * len(names))):
                found[name].append(result)
            print(f"seed {seed} done, {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    seeds = len(found[names[0]])
    print(f"{seeds} seeds each ({options.first} to {options.first + seeds - 1}), the part's checks in this process")
    print("| submission | always lost | lost on some seeds | seeds that differed |")
    print("|---|---|---|---|")
    for name, results in found.items():
        counts = collections.Counter(check for lost, _ in results for check in lost)
        always = sorted(check for check, count in counts.items() if count == seeds)
        some = sorted((check, count) for check, count in counts.items() if count < seeds)
        shown = ", ".join(f"{check} ({count}/{seeds})" for check, count in some) or "none"
        numbered = enumerate(results, options.first)
        off = "; ".join(f"{seed}: {broken}" for seed, (_, broken) in numbered if broken) or "none"
        print(f"| `{name}` | {', '.join(always) or 'none'} | {shown} | {off} |")
    print(f"\n{seeds} seeds, {time.perf_counter() - started:.0f} s wall, load {load()}")


if __name__ == "__main__":
    main()
