"""Print where one grading's time goes, as a batch's forked grading spends it.

    .venv/bin/python bench/grading_profile.py [--gradings 5] [--tree PATH] [--top 25] [--submission FILE] [--no-profile]

Like a batch: one zygote, ``grade.warm_up`` first, then ``--gradings`` gradings of the reference one
after another with that zygote (the first is not counted: a batch's children fork from a warm parent).
For each: its wall time, the CPU seconds of this (the trusted) process (getrusage), and those of
every process it started (the zygote's children: workers and keepers), counted by a cgroup of the
bench's own that this process joins (cgroup v1 cpuacct or v2; root). Then each check's median seconds,
and cProfile's view of the last grading in this process, by CPU time (not the wall clock): the functions
with the most time of their own, and the most time below them. ``--tree PATH`` grades with the code of
another checkout (a ``git archive`` of an older revision), so that two revisions compare in one session.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import resource
import statistics
import sys
import time
from pathlib import Path

from grading_speed import charged, cpu_group  # this folder: the same CPU counter as the batch bench

ROOT = Path(__file__).resolve().parent.parent


def _join_cpu_group() -> tuple[Path, str] | None:
    """Move this process into a fresh cgroup that counts CPU time below it too; its counter file."""
    group = cpu_group()
    if group is not None:
        (group[0] / "cgroup.procs").write_text(str(os.getpid()))
    return group


def _charged(group: tuple[Path, str] | None) -> float:
    return charged(group) if group else float("nan")


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--gradings", type=int, default=5)
    parser.add_argument("--tree", type=Path, default=ROOT, help="grade with the code of this checkout")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--submission", type=Path, default=ROOT / "reference" / "attention.py")
    parser.add_argument("--no-profile", action="store_true", help="CPU seconds only (cProfile slows the last grading)")
    args = parser.parse_args()
    sys.path.insert(0, str(args.tree.resolve()))
    group = _join_cpu_group()  # before the zygote starts: it and all it forks are counted too

    from autograder.config import load_settings
    from autograder.grade import grade, warm_up
    from autograder.sandbox.zygote import Zygote

    settings = load_settings()
    zygote = Zygote()
    warm_up(settings)
    zygote.wait_ready()
    rows, checks = [], {}
    profile = cProfile.Profile(time.process_time)  # CPU time: a loaded machine's waits are not this process's cost
    try:
        for index in range(args.gradings):
            last = index == args.gradings - 1 and not args.no_profile
            wall, own, total = time.perf_counter(), _own_cpu(), _charged(group)
            if last:
                profile.enable()
            grading = grade(args.submission, settings, zygote=zygote)
            if last:
                profile.disable()
            wall, own, total = time.perf_counter() - wall, _own_cpu() - own, _charged(group) - total
            score = sum(s.score for s in grading.scored)
            if index:  # the first warms what a batch's parent has warm
                rows.append((wall, own, total - own))
                for outcome in grading.outcomes:
                    checks.setdefault(outcome.check, []).append(outcome.seconds)
            print(
                f"grading {index + 1}: {wall:.2f} s wall, trusted {own:.2f} CPU-s, workers {total - own:.2f} CPU-s,"
                f" {score:g} points{' (not counted)' if not index else ''}",
                flush=True,
            )
    finally:
        zygote.close()
        if group is not None:
            (group[0].parent / "cgroup.procs").write_text(str(os.getpid()))
            try:
                group[0].rmdir()
            except OSError:
                pass
    if rows:
        wall, own, workers = (statistics.median(column) for column in zip(*rows))
        print(
            f"median of {len(rows)}: {wall:.2f} s wall, trusted process {own:.2f} CPU-s, workers {workers:.2f} CPU-s"
            f" (load average {os.getloadavg()[0]:.1f}; tree {args.tree})"
        )
        print("checks (median seconds):")
        for check, seconds in sorted(checks.items(), key=lambda item: -statistics.median(item[1]))[:12]:
            print(f"  {check:28s} {statistics.median(seconds):6.3f}")
    for order in () if args.no_profile else ("tottime", "cumulative"):
        out = io.StringIO()
        pstats.Stats(profile, stream=out).sort_stats(order).print_stats(args.top)
        print(f"\nthe last grading, in this process, by {order}:")
        print("\n".join(line for line in out.getvalue().splitlines() if line.strip())[:12000])


if __name__ == "__main__":
    main()
