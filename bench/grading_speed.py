"""Print how long grading takes: one submission, a batch of 40 with --jobs 2, and where the time goes.

    .venv/bin/python bench/grading_speed.py [--students 40] [--jobs 2] [--against REV [--repeat 3]] [--batch-only]

Figures are wall-clock seconds on this machine; compare runs made in the same session. Each batch
also prints its CPU seconds: what the kernel charged to the batch and every process it started
(gradings, the zygote, every worker and keeper), counted in a cgroup of the bench's own (cgroup
v1 cpuacct, or v2, where this user may make one). On a machine shared with other work the wall
clock measures the load as much as the grader; the CPU seconds much less so.
``--against REV[,REV...]`` times the batch with the code of those git revisions too, interleaved with
this tree's (REV, this, REV, this, ...), and prints the medians and this tree's ratios: from one session.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
# sdpa-grade run from the tree given as the first argument, whatever this environment has installed
# (its console script's entry point: cli.run, or main in trees from before run)
FROM_TREE = (
    "import sys; sys.path.insert(0, sys.argv.pop(1)); from autograder import cli; "
    "sys.exit(getattr(cli, 'run', cli.main)())"
)


def cpu_group() -> tuple[Path, str] | None:
    """A fresh cgroup below ours that counts CPU time hierarchically, and its counter file; None where none can
    be made (not root, no cpuacct nor v2)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    name = f"sdpa-bench-{os.getpid()}-{time.monotonic_ns()}"
    for line in lines:
        _, controllers, path = line.split(":", 2)
        v1 = "cpuacct" in controllers.split(",")
        if not v1 and not (line.startswith("0::") and Path("/sys/fs/cgroup/cgroup.controllers").exists()):
            continue
        folder = Path("/sys/fs/cgroup") / ("cpuacct" if v1 else "") / path.lstrip("/") / name
        try:
            folder.mkdir()
        except OSError:
            continue
        return folder, "cpuacct.usage" if v1 else "cpu.stat"
    return None


def charged(group: tuple[Path, str]) -> float:
    folder, counter = group
    text = (folder / counter).read_text()
    if counter == "cpuacct.usage":
        return int(text) / 1e9
    return int(dict(line.split() for line in text.splitlines())["usage_usec"]) / 1e6


def counted(args: list[str], **options) -> tuple[float, float | None, subprocess.CompletedProcess]:
    """Run ``args`` (``options`` as subprocess.run takes them) in a fresh CPU-counting cgroup: its wall seconds, the
    CPU seconds of it and every process it started (None: not counted), and the finished process."""
    group = cpu_group()

    def join() -> None:  # in the child, before exec: everything it starts is counted in the group
        if group is not None:
            (group[0] / "cgroup.procs").write_text(str(os.getpid()))

    start = time.perf_counter()
    try:
        done = subprocess.run(args, preexec_fn=join, **options)
        return time.perf_counter() - start, charged(group) if group else None, done
    finally:
        if group is not None:
            for _ in range(100):  # the grader removes its own groups inside ours as it ends
                try:
                    group[0].rmdir()
                    break
                except OSError:
                    time.sleep(0.05)


def timed(args: list[str]) -> tuple[float, float | None]:
    """Wall seconds of the command, and the CPU seconds of it and every process it started (None: not counted)."""
    wall, cpu, _ = counted(args, check=True, capture_output=True)
    return wall, cpu


def _cpu(seconds: float | None) -> str:
    return "" if seconds is None else f", {seconds:.1f} CPU-s"


def batch(tree: Path, folder: Path, jobs: int) -> tuple[float, float | None]:
    """Wall and CPU seconds of one batch over ``folder`` with the code of ``tree``."""
    out = folder.parent / f"{folder.name}-out"
    shutil.rmtree(out, ignore_errors=True)
    try:
        return timed(
            [
                sys.executable,
                "-c",
                FROM_TREE,
                str(tree),
                "--batch",
                str(folder),
                "--jobs",
                str(jobs),
                "--json-dir",
                str(out),
            ]
        )
    finally:
        shutil.rmtree(out, ignore_errors=True)


def against(revisions: list[str], folder: Path, jobs: int, repeat: int) -> None:
    """The batch with each revision's code and with this tree's, interleaved; each median, and this tree's ratios."""
    trees = {}
    try:
        for revision in revisions:
            trees[revision] = Path(tempfile.mkdtemp(prefix="sdpa-bench-rev-"))
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision], check=True, capture_output=True)
            subprocess.run(["tar", "-x", "-C", str(trees[revision])], input=archive.stdout, check=True)
        trees["this tree"] = ROOT
        times: dict[str, list[tuple[float, float | None]]] = {name: [] for name in trees}
        for _ in range(repeat):
            for name, tree in trees.items():
                times[name].append(batch(tree, folder, jobs))
                wall, cpu = times[name][-1]
                print(f"  {name}: {wall:.1f} s{_cpu(cpu)} (load average {os.getloadavg()[0]:.1f})", flush=True)
        medians = {}
        for name, runs in times.items():
            cpus = [cpu for _, cpu in runs if cpu is not None]
            medians[name] = (statistics.median(wall for wall, _ in runs), statistics.median(cpus) if cpus else None)
            print(f"batch with {name}: median {medians[name][0]:.1f} s{_cpu(medians[name][1])} of {repeat}")
        new_wall, new_cpu = medians["this tree"]
        for revision in revisions:
            old_wall, old_cpu = medians[revision]
            print(
                f"this tree / {revision}: wall {new_wall / old_wall:.2f}"
                + (f", CPU {new_cpu / old_cpu:.2f}" if old_cpu and new_cpu else "")
            )
    finally:
        for revision in revisions:
            shutil.rmtree(trees.get(revision, "/nonexistent"), ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument(
        "--against",
        metavar="REV[,REV...]",
        help="also time the batch with the code of these git revisions, interleaved",
    )
    parser.add_argument("--repeat", type=int, default=3, help="batches per tree with --against")
    parser.add_argument("--batch-only", action="store_true", help="skip the single submission and the one grading")
    args = parser.parse_args()
    reference = ROOT / "reference" / "attention.py"
    if not args.batch_only:
        single(reference)
    folder = Path(tempfile.mkdtemp(prefix="sdpa-bench-"))
    try:
        for index in range(args.students):
            shutil.copy(reference, folder / f"student{index:03d}.py")
        if not args.against:
            wall, cpu = batch(ROOT, folder, args.jobs)
            print(
                f"batch of {args.students} correct submissions, --jobs {args.jobs}: {wall:.1f} s"
                f" ({wall / args.students:.2f} s per submission){_cpu(cpu)}"
            )
        else:
            against(args.against.split(","), folder, args.jobs, args.repeat)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def single(reference: Path) -> None:
    """One submission by sdpa-grade, and where one grading in this process spends its time."""
    singles = [timed([str(BIN / "sdpa-grade"), "grade", str(reference)])[0] for _ in range(3)]
    print(
        f"one submission (sdpa-grade, whole process): median {statistics.median(singles):.2f} s of {len(singles)} runs"
    )

    from autograder.config import load_settings
    from autograder.grade import grade

    grading = grade(reference, load_settings())
    checks = sorted(grading.outcomes, key=lambda o: -o.seconds)
    total = sum(o.seconds for o in checks)
    print(
        f"inside one grading: {time.perf_counter() - grading.started:.2f} s,"
        f" of which checks {total:.2f} s; slowest checks:"
    )
    for outcome in checks[:6]:
        print(f"  {outcome.check:28s} {outcome.seconds:6.2f} s")


if __name__ == "__main__":
    main()
