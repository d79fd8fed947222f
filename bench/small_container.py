"""Grade as Gradescope's default container would: half a CPU and 768 MB, in a cgroup the bench makes itself.

    .venv/bin/python bench/small_container.py [--runs 5] [--only NAME,...] [--no-baseline]

Each grading is Gradescope's: a cold ``run_autograder`` (the bundle's own script, autograder/release/gradescope.py)
in a fresh /autograder of its own (``AUTOGRADER_ROOT``, its venv this one), on ``submission/attention.py``, with a
clean environment. It runs in a cgroup made for that grading alone (autograder/sandbox/cgroups.py's ``Cgroups``,
below this process's own groups): a CPU quota of 50000 us per 100000 us (cgroup v1 ``cpu.cfs_quota_us``, v2
``cpu.max``), memory capped at 768 MiB, swap at 0 (v1 ``memory.memsw.limit_in_bytes``, v2 ``memory.swap.max``)
where the kernel has it. The grader makes its sandboxes' groups inside the cgroup it runs in, so they sit below the
bench's group: its quota holds them, and its memory peak (v1 ``memory.max_usage_in_bytes``, hierarchical; v2
``memory.peak``) is the whole grading's, grader, zygote, keepers and workers, page cache charged to them included.
While the grading runs the bench samples, every 0.2 s, the groups below its own (to show the sandbox's are there)
and the whole group's anonymous memory and page cache (v1 ``total_rss`` and ``total_cache``, v2 ``anon`` and
``file``), for what the peak is made of.

The reference is graded ``--runs`` times, each loop variant of bench/timing_reliability.py (the Python loops the
timing check must catch) once, interleaved; with the baseline on, each reference grading is paired with one in a
group without limits (the same counters), for the ratios. Printed: each grading's score, both timing checks'
verdicts, wall and CPU seconds, the CPU share it got, the time the quota throttled it, and the memory peak; then
the medians and the targets (0 false timing fails, every loop caught, peak under 600 MB).
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: the bench folder is importable as a package from the root
    sys.path.insert(0, str(ROOT))

from autograder.record import Result  # noqa: E402
from autograder.release.gradescope import RUN  # noqa: E402
from autograder.report import load  # noqa: E402
from autograder.sandbox.cgroups import Cgroups, remove  # noqa: E402
from autograder.status import Category, Status, earned  # noqa: E402
from bench.timing_reliability import LOOPS, submission  # noqa: E402

CPU_MAX = (50_000, 100_000)  # microseconds of CPU per period: half a CPU, Gradescope's default 0.5 vCPU
MEMORY_BYTES = 768 << 20  # Gradescope's default 768 MB, as a cgroup reads "768M"
PROCESSES = 4096  # Gradescope's container sets none; the sandbox caps the student's own
TARGET_PEAK_MIB = 600


@dataclass
class Grading:
    """One grading in the small container: what it scored and what it cost."""

    name: str
    limited: bool
    score: float = 0.0
    max_score: float = 0.0
    verdicts: dict[str, tuple[str, str]] = field(default_factory=dict)  # timing check -> (outcome, output)
    lost: list[str] = field(default_factory=list)  # checks that scored under their points
    wall: float = 0.0
    cpu: float | None = None
    throttled: float | None = None
    peak_mib: float | None = None
    nested: int = 0  # groups seen below the bench's memory group while the grading ran (the sandbox's)
    anon_mib: float | None = None  # the most anonymous memory sampled (every 0.2 s) in the whole group
    cache_mib: float | None = None  # the most page cache sampled
    exit: int = 0
    error: str = ""

    @property
    def share(self) -> float | None:
        """The CPUs this grading got on average (CPU seconds per wall second)."""
        return None if self.cpu is None or not self.wall else self.cpu / self.wall


class SmallBox:
    """A cgroup for one grading, with Gradescope's limits (``limited``) or none; ``reason`` says why there is none
    usable here (then ``groups`` is None)."""

    def __init__(self, label: str, *, limited: bool = True) -> None:
        self.limited = limited
        self.reason = ""
        self.swap = ""
        self.groups: Cgroups | None = Cgroups(
            f"smallbox-{label}-{uuid.uuid4().hex[:8]}",
            memory_bytes=MEMORY_BYTES if limited else 1 << 50,
            processes=PROCESSES,
        )
        if not self.groups.procs:
            self.reason = f"no cgroup this user may make: {self.groups.describe()}"
        elif self.groups.cpu_group is None:
            self.reason = f"no cpu controller to cap the CPU with ({self.groups.describe()})"
        elif self.memory_folder() is None:
            self.reason = f"no memory peak counter ({self.groups.describe()})"
        elif limited:
            try:
                self._limit()
            except OSError as error:
                self.reason = f"the limits could not be set: {error}"
        if self.reason:
            self.close()

    def _limit(self) -> None:
        cpu = self.groups.cpu_group
        quota, period = CPU_MAX
        if (cpu / "cpu.max").exists():  # cgroup v2
            (cpu / "cpu.max").write_text(f"{quota} {period}")
        else:  # cgroup v1: the period first, the quota within it
            (cpu / "cpu.cfs_period_us").write_text(str(period))
            (cpu / "cpu.cfs_quota_us").write_text(str(quota))
        memory = self.memory_folder()
        if (memory / "memory.swap.max").exists():  # v2: Cgroups writes 0 there itself
            self.swap = "memory.swap.max " + (memory / "memory.swap.max").read_text().strip()
        elif (memory / "memory.memsw.limit_in_bytes").exists():  # v1: memory and swap together, no more than memory
            (memory / "memory.memsw.limit_in_bytes").write_text(str(MEMORY_BYTES))
            self.swap = "memory.memsw.limit_in_bytes = memory.limit_in_bytes"
        else:
            self.swap = "not limited (no swap controller here)"

    def memory_folder(self) -> Path | None:
        """The group that counts the grading's memory."""
        if self.groups is None:
            return None
        return next((f for f in self.groups.folders if (f / "memory.stat").exists()), None)

    def describe(self) -> str:
        if self.reason:
            return self.reason
        memory = self.memory_folder()
        hierarchy = memory / "memory.use_hierarchy"
        counted = "hierarchical" if not hierarchy.exists() or hierarchy.read_text().strip() == "1" else "NOT nested"
        return (
            f"{self.groups.describe()}; CPU {CPU_MAX[0]} us per {CPU_MAX[1]} us ({CPU_MAX[0] / CPU_MAX[1]:g} CPU),"
            f" memory {MEMORY_BYTES >> 20} MiB, swap: {self.swap}; memory peak from"
            f" {self._peak_file().name} ({counted})"
        )

    def _peak_file(self) -> Path:
        memory = self.memory_folder()
        v2 = memory / "memory.peak"
        return v2 if (memory / "memory.max").exists() else memory / "memory.max_usage_in_bytes"

    def peak_mib(self) -> float | None:
        try:
            return int(self._peak_file().read_text()) / (1 << 20)
        except (OSError, ValueError):
            return None  # v2 before Linux 5.19 has no memory.peak

    def throttled(self) -> float | None:
        """Seconds the CPU quota held the group back."""
        try:
            stat = dict(line.split() for line in (self.groups.cpu_group / "cpu.stat").read_text().splitlines())
        except (OSError, ValueError):
            return None
        if "throttled_usec" in stat:
            return int(stat["throttled_usec"]) / 1e6
        return int(stat.get("throttled_time", 0)) / 1e9

    def usage_mib(self) -> tuple[float, float] | None:
        """Anonymous memory and page cache of the whole group now, hierarchical (v1 total_rss and total_cache,
        v2 anon and file)."""
        try:
            stat = dict(line.split() for line in (self.memory_folder() / "memory.stat").read_text().splitlines())
        except (OSError, ValueError):
            return None
        keys = ("anon", "file") if "anon" in stat else ("total_rss", "total_cache")
        return tuple(int(stat.get(key, 0)) / (1 << 20) for key in keys)

    def nested(self) -> set[str]:
        """The groups below the one that counts the memory now (the sandbox's, while a grading runs)."""
        try:
            return {child.name for child in self.memory_folder().iterdir() if child.is_dir()}
        except OSError:
            return set()

    def command(self, args: list[str]) -> list[str]:
        """``args``, run by a shell that first puts itself in the group (so everything it starts is counted there):
        no preexec_fn, so gradings may start from several threads at once."""
        join = 'for procs in "$@"; do echo $$ > "$procs" || exit 125; done; exec ' + " ".join(map(shlex.quote, args))
        return ["sh", "-c", join, "join", *self.groups.procs]

    def close(self) -> None:
        """Kill what is left in the group, and remove it with whatever the grading left below it."""
        if self.groups is None:
            return
        for folder in self.groups.folders:
            for child in [c for c in folder.iterdir() if c.is_dir()] if folder.exists() else []:
                remove(child)
        self.groups.close()
        self.groups = None

    def __enter__(self) -> SmallBox:
        return self

    def __exit__(self, *_) -> None:
        self.close()


def clean_env(root: Path, tmp: Path) -> dict[str, str]:
    """The environment of Gradescope's container: none of this venv's settings nor the project's overrides."""
    drop = ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PYTHONSAFEPATH")
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("SDPA_")}
    return {**env, "AUTOGRADER_ROOT": str(root), "TMPDIR": str(tmp)}


def autograder_root(folder: Path, source: Path) -> Path:
    """A fresh /autograder: source/run_autograder (the bundle's script), the venv (this one), the submission."""
    root = folder / "autograder"
    (root / "source").mkdir(parents=True)
    (root / "submission").mkdir()
    (root / "tmp").mkdir()
    script = root / "source" / "run_autograder"
    script.write_text(RUN)
    script.chmod(0o755)
    (root / "venv").symlink_to(Path(sys.prefix))
    shutil.copy(source, root / "submission" / "attention.py")
    return root


def grade(source: Path, name: str, folder: Path, *, limited: bool = True, timeout: float = 600) -> Grading:
    """One cold grading of ``source``, as Gradescope runs it, in a group of its own; raises RuntimeError where no
    such group can be made here."""
    root = autograder_root(folder, source)
    found = Grading(name, limited)
    with SmallBox(name, limited=limited) as box:
        if box.reason:
            raise RuntimeError(box.reason)
        seen: set[str] = set()
        usage: list[tuple[float, float]] = []
        done = threading.Event()

        def watch() -> None:
            while not done.wait(0.2):
                seen.update(box.nested())
                now = box.usage_mib()
                if now is not None:
                    usage.append(now)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        before = box.groups.cpu_seconds()
        started = time.perf_counter()
        try:
            ran = subprocess.run(
                box.command(["bash", str(root / "source" / "run_autograder")]),
                cwd=root / "source",
                env=clean_env(root, root / "tmp"),
                capture_output=True,
                text=True,
                timeout=timeout,
            )
            found.exit = ran.returncode
        except subprocess.TimeoutExpired:
            found.exit, found.error = -1, f"no result within {timeout:g} s"
            ran = None
        found.wall = time.perf_counter() - started
        done.set()
        watcher.join()
        after = box.groups.cpu_seconds()
        found.cpu = None if before is None or after is None else after - before
        found.throttled, found.peak_mib, found.nested = box.throttled(), box.peak_mib(), len(seen)
        if usage:
            found.anon_mib, found.cache_mib = max(u[0] for u in usage), max(u[1] for u in usage)
    results = root / "results" / "results.json"
    if not results.is_file():
        found.error = found.error or f"no results.json; stderr: {ran.stderr[-500:] if ran else ''}"
        return found
    record = Result.of(load(results))
    found.score, found.max_score = float(record.score), float(record.max_score)
    for test in record.tests:
        if Category.TIMING in test.tags:
            found.verdicts[test.check] = (test.outcome, test.output)
        if not earned(test):  # lost points: a check carried forward kept them
            found.lost.append(test.check)
    if found.exit != 0 and not found.error:
        found.error = f"run_autograder exited {found.exit}: {ran.stderr[-300:]}"
    return found


def line(run: Grading) -> str:
    cpu = "-" if run.cpu is None else f"{run.cpu:6.1f}"
    share = "-" if run.share is None else f"{run.share:5.2f}"
    throttled = "-" if run.throttled is None else f"{run.throttled:6.1f}"
    peak = "-" if run.peak_mib is None else f"{run.peak_mib:6.0f}"
    parts = "-" if run.anon_mib is None else f"{run.anon_mib:4.0f}+{run.cache_mib:<4.0f}"
    verdicts = " ".join(f"{check}={outcome}" for check, (outcome, _) in sorted(run.verdicts.items()))
    why = next((output for outcome, output in run.verdicts.values() if outcome == Status.FAILED), "")
    return (
        f"{run.name:32s} {'0.5 CPU' if run.limited else 'no limit':8s} {run.score:4g}/{run.max_score:<4g}"
        f" {verdicts:42s} {run.wall:6.1f} {cpu} {share} {throttled} {peak} {parts:9s} {run.nested:3d}"
        + (f"  {why[:110]}" if why else "")
        + (f"  ERROR {run.error}" if run.error else "")
    )


def median(values: list[float | None]) -> float:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="gradings of the reference")
    parser.add_argument("--only", default="", help="comma-separated loop variants (default: all of them)")
    parser.add_argument("--no-baseline", action="store_true", help="skip the reference's gradings without limits")
    options = parser.parse_args()
    loops = [n for n in LOOPS if not options.only or n in options.only.split(",")]
    probe = SmallBox("probe")
    if probe.reason:
        raise SystemExit(f"small_container: {probe.reason}")
    print(f"small container: {probe.describe()}")
    probe.close()
    print(f"load at the start: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    # the reference's gradings spread among the loops, so the machine's load changes reach both alike
    order: list[str] = []
    for index in range(max(options.runs, len(loops))):
        order += (["reference"] if index < options.runs else []) + loops[index : index + 1]
    runs: list[Grading] = []
    header = f"{'submission':32s} {'limits':8s} {'score':9s} {'timing verdicts':42s} {'wall s':>6} {'CPU s':>6}"
    print(f"{header} {'share':>5} {'thrtl':>6} {'MiB':>6} {'anon+file':9s} {'grp':>3}")
    base = Path(tempfile.mkdtemp(prefix="sdpa-smallbox-"))
    try:
        for index, name in enumerate(order):
            source = submission(name, base)
            for limited in (True, False) if name == "reference" and not options.no_baseline else (True,):
                runs.append(grade(source, name, base / f"{index}-{limited}", limited=limited))
                print(f"{line(runs[-1])}  (load {os.getloadavg()[0]:.1f})", flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    summary(runs)
    print(f"load at the end: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")


def summary(runs: list[Grading]) -> None:
    honest = [r for r in runs if r.name == "reference" and r.limited]
    free = [r for r in runs if r.name == "reference" and not r.limited]
    loops = [r for r in runs if r.name != "reference"]
    false_fails = [r for r in honest if r.verdicts.get("timing_cpu", ("",))[0] != Status.PASSED]
    full = [r for r in honest if r.score == r.max_score and not r.error]
    caught = [r for r in loops if r.verdicts.get("timing_cpu", ("",))[0] == Status.FAILED and not r.error]
    peak = max((r.peak_mib for r in runs if r.limited and r.peak_mib is not None), default=float("nan"))
    print(
        f"reference under 0.5 CPU / 768 MiB: {len(full)} of {len(honest)} full marks,"
        f" {len(false_fails)} false timing fails; median wall {median([r.wall for r in honest]):.1f} s,"
        f" CPU {median([r.cpu for r in honest]):.1f} s, share {median([r.share for r in honest]):.2f} CPU,"
        f" throttled {median([r.throttled for r in honest]):.1f} s, peak {median([r.peak_mib for r in honest]):.0f} MiB"
        f" (max {max((r.peak_mib or 0 for r in honest), default=0):.0f}; sampled every 0.2 s, the most anonymous"
        f" memory {median([r.anon_mib for r in honest]):.0f} MiB and page cache"
        f" {median([r.cache_mib for r in honest]):.0f} MiB, medians)"
    )
    if free:
        ratio = median([a.wall / b.wall for a, b in zip(honest, free)])
        cpu_ratio = median([a.cpu / b.cpu for a, b in zip(honest, free) if a.cpu and b.cpu])
        print(
            f"reference without limits (paired): median wall {median([r.wall for r in free]):.1f} s,"
            f" CPU {median([r.cpu for r in free]):.1f} s, share {median([r.share for r in free]):.2f} CPU, peak"
            f" {median([r.peak_mib for r in free]):.0f} MiB; small / unlimited, median of pairs: wall {ratio:.2f},"
            f" CPU {cpu_ratio:.2f}"
        )
    if loops:
        walls = median([r.wall for r in loops]), median([r.wall for r in honest])
        print(
            f"loop variants: {len(caught)} of {len(loops)} caught; median wall {walls[0]:.1f} s"
            f" (median loop / median reference: {walls[0] / walls[1]:.2f}),"
            f" peak max {max((r.peak_mib or 0 for r in loops), default=0):.0f} MiB"
        )
    print(
        f"targets: 0 false timing fails: {'yes' if not false_fails else 'NO'}; every loop caught:"
        f" {'yes' if len(caught) == len(loops) else 'NO'}; peak of every grading under {TARGET_PEAK_MIB} MB"
        f" ({TARGET_PEAK_MIB * 1e6 / (1 << 20):.0f} MiB): {'yes' if peak < TARGET_PEAK_MIB * 1e6 / (1 << 20) else 'NO'}"
        f" (max {peak:.0f} MiB)"
    )


if __name__ == "__main__":
    main()
