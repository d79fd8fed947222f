"""Each classic one-function mistake on many seeds: the checks it loses, and any of another function's.

    PYTHONPATH=. .venv/bin/python bench/one_mistake.py [--seeds N] [--jobs J] [--only NAME,...] [--extended]

The value checks run in this process (tests/one_mistake.py: integrity and timing taken as passed, so their
scoring is measured, not their measures), on seeds 0 to N-1. Prints a Markdown table: per overlay, its function, the
checks it loses on every seed, those it loses on some seeds only (on how many), the points it loses (fewest to
most), and every seed that differed: one on which it lost a check of another function, with those checks. Two
independent mistakes (``TWO``) must lose, on each seed, what the first alone loses there and the second's checks.

``--extended`` grades in a copy of the project with docs/extending.md's worked example applied (its three pieces, as
tests/docs/test_extending.py applies them): the attention's mistakes, which the guide's ``windowed_attention`` builds
on, and a mistake in each of the guide's two functions (``EXTENDED``). By default it grades those alone.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from tests.one_mistake import ONE_FUNCTION, lost, own_checks

# two independent mistakes -> (the one-function mistake it holds first, the checks the second adds on every seed)
TWO = {"mistake_query_axis_and_overflow": ("mistake_query_axis", {"sdpa_dtypes"})}
# a mistake in each of docs/extending.md's two functions, as an overlay of the copy's reference: (function, source)
EXTENDED = {
    "window_ignored": (  # the guide's own wrong body: a plain causal mask
        "sliding_window_mask",
        "def sliding_window_mask(T_q, window, T_k=None, *, device=None):\n"
        "    T_k = T_q if T_k is None else T_k\n"
        "    return torch.tril(torch.ones(T_q, T_k, dtype=torch.bool, device=device))\n",
    ),
    "windowed_mask_unused": (  # builds the window's mask and attends to every key anyway
        "windowed_attention",
        "def windowed_attention(Q, K, V, window):\n"
        "    sliding_window_mask(Q.size(-2), window, K.size(-2), device=Q.device)\n"
        "    return scaled_dot_product_attention(Q, K, V)\n",
    ),
}
# graded with --extended unless --only says otherwise: the attention's mistakes (windowed_attention calls it) and the
# two above
EXTENDED_DEFAULT = (
    "mistake_divide_by_dk",
    "mistake_no_scale",
    "mistake_transpose_12",
    "mistake_query_axis",
    "mistake_mask_inverted",
    "mistake_zero_fill",
    *EXTENDED,
)
ROOT = Path(__file__).resolve().parent.parent
HEADER = "| submission | function | checks lost (every seed) | lost on some seeds | points lost | seeds that differed |"


def _function(overlay: str) -> str:
    return EXTENDED[overlay][0] if overlay in EXTENDED else ONE_FUNCTION[overlay]


def _one(overlay: str, seed: int) -> dict[str, float]:
    return lost(overlay, seed)


def _points(results: list[dict[str, float]]) -> str:
    totals = [sum(points.values()) for points in results]
    low, high = min(totals), max(totals)
    return f"{low:g}" if low == high else f"{low:g} to {high:g} (median {statistics.median(totals):g})"


def _row(overlay: str, function: str, results: list[dict[str, float]], beyond: dict[int, list[str]]) -> str:
    seeds = len(results)
    counts = Counter(check for points in results for check in points)
    always = ", ".join(sorted(check for check, count in counts.items() if count == seeds)) or "none"
    some = ", ".join(f"{check} ({count}/{seeds})" for check, count in sorted(counts.items()) if count < seeds)
    shown = "; ".join(f"{seed}: {', '.join(checks)}" for seed, checks in beyond.items()) or "none"
    return f"| {overlay} | {function} | {always} | {some or 'none'} | {_points(results)} | {shown} |"


def load() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


def sweep(names: list[str], seeds: int, jobs: int, until: float | None = None) -> None:
    """The table for ``names`` (one-function mistakes, then two-mistake ones), graded in this checkout, a seed at a
    time: past ``until`` (time.time()), no new seed is started and the table holds the seeds done."""
    started = time.perf_counter()
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load {load()}", flush=True)
    graded = sorted({*(name for name in names if name not in TWO), *(TWO[name][0] for name in names if name in TWO)})
    found: dict[str, list[dict[str, float]]] = {name: [] for name in graded + [n for n in names if n in TWO]}
    with ProcessPoolExecutor(jobs) as pool:
        for seed in range(seeds):
            if seed and until is not None and time.time() > until:  # one seed at least
                break
            for name, points in zip(found, pool.map(_one, list(found), [seed] * len(found))):
                found[name].append(points)
            print(f"seed {seed} done, {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    done = len(next(iter(found.values())))
    print(f"seeds 0 to {done - 1}")
    print(HEADER)
    print("|---|---|---|---|---|---|")
    for overlay in [name for name in names if name not in TWO]:
        results, own = found[overlay], own_checks(_function(overlay))
        beyond = {seed: sorted(set(points) - own) for seed, points in enumerate(results) if set(points) - own}
        print(_row(overlay, _function(overlay), results, beyond))
    for overlay in [name for name in names if name in TWO]:
        (first, added), results = TWO[overlay], found[overlay]
        differed = {
            seed: sorted(set(points) ^ (set(before) | added))  # lost beyond the two, or one of the two's kept
            for seed, (points, before) in enumerate(zip(results, found[first]))
            if set(points) != set(before) | added
        }
        print(_row(overlay, f"{ONE_FUNCTION[first]} + {', '.join(sorted(added))}", results, differed))
    print(f"\n{done} seeds, {time.perf_counter() - started:.0f} s wall, load {load()}")


def extended(names: list[str], seeds: int, jobs: int, until: str | None) -> None:
    """The same table, graded in a copy of the project with docs/extending.md's pieces and ``EXTENDED``'s overlays."""
    sys.path.insert(0, str(ROOT))
    from tests.docs.test_extending import pieces
    from tests.helpers import tracked_copy

    with tempfile.TemporaryDirectory() as folder:
        copy = tracked_copy(Path(folder))
        for path, how, code in pieces():
            target = copy / path
            before = "" if how == "a new file" else target.read_text()
            if path.endswith(".py") and before:
                before = before.rstrip("\n") + "\n\n\n"
            target.write_text(before + code)
        for name, (_, source) in EXTENDED.items():
            (copy / "tests" / "submissions" / "overlays" / f"{name}.py").write_text(f"import torch\n\n\n{source}")
        (copy / "bench" / "one_mistake.py").write_text(Path(__file__).read_text())
        args = ["--seeds", str(seeds), "--jobs", str(jobs), "--only", ",".join(names), "--inside"]
        args += ["--until", until] if until else []
        environ = {**os.environ, "PYTHONPATH": str(copy)}
        script = str(copy / "bench" / "one_mistake.py")
        subprocess.run([sys.executable, script, *args], cwd=copy, env=environ, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--only", default="", help="comma-separated overlay names")
    parser.add_argument("--extended", action="store_true", help="in a copy with docs/extending.md's example applied")
    parser.add_argument("--until", help="HH:MM UTC: start no seed after it (the table holds the seeds done)")
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)  # run by --extended, in the copy
    options = parser.parse_args()
    if options.extended:
        names = options.only.split(",") if options.only else list(EXTENDED_DEFAULT)
        extended(names, options.seeds, options.jobs, options.until)
        return
    known = [*sorted(ONE_FUNCTION), *sorted(TWO)] + (list(EXTENDED) if options.inside else [])
    names = [name for name in known if not options.only or name in options.only.split(",")]
    sweep(names, options.seeds, options.jobs, until_time(options.until))


def until_time(when: str | None) -> float | None:
    """time.time() at ``when`` (HH:MM, UTC) today."""
    if not when:
        return None
    hours, minutes = map(int, when.split(":"))
    midnight = time.time() // 86400 * 86400
    return midnight + hours * 3600 + minutes * 60


if __name__ == "__main__":
    main()
