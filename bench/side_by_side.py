"""Print whether graders side by side, on a busy machine, give the grades each gives alone.

    .venv/bin/python bench/side_by_side.py [--graders 4] [--rounds 3] [--busy 2] [--user UID[,UID...]] [--json]

First each submission (correct, wrong, looping: ``SUBMISSIONS``) is graded alone, one ``sdpa-grade``
at a time, with nothing else of ours running: its quiet grade. Then ``--busy`` processes
(``python -c 'while True: pass'``) compete for the CPUs while, ``--rounds`` times, ``--graders``
``sdpa-grade`` processes start at once, each with a TMPDIR of its own, each on another submission.
Every grading is compared with its submission's quiet grade, check by check; afterwards no
process any grading started may still run, and no cgroup it made may be left. ``--user`` runs
every grader as that user (as root: how the unprivileged half runs); several, comma-separated,
take turns within each round (``--user 0,65534``: graders as root and as nobody at once; the
grades alone are the first user's). ``--json`` prints the figures as one JSON line too
(tests/sandbox/test_side_by_side.py reads it).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
REFERENCE = ROOT / "reference" / "attention.py"
OVERLAYS = ROOT / "tests" / "submissions" / "overlays"
# correct (two ways), wrong (a named mistake), and Python loops (one in every branch, one only without a mask)
SUBMISSIONS = [
    "reference",
    "correct_einsum",
    "mistake_no_scale",
    "mistake_loop_over_queries",
    "mistake_loop_only_without_mask",
]
CGROUPS = Path("/sys/fs/cgroup")


def write_submissions(folder: Path, names: list[str]) -> dict[str, Path]:
    """Each submission as a file: the reference, or the reference with an overlay appended."""
    paths = {}
    for name in names:
        text = REFERENCE.read_text()
        if name != "reference":
            text += f"\n\n{(OVERLAYS / f'{name}.py').read_text()}"
        paths[name] = folder / f"{name}.py"
        paths[name].write_text(text)
        paths[name].chmod(0o644)
    return paths


def start(path: Path, folder: Path, user: int | None) -> tuple[subprocess.Popen, Path]:
    """``sdpa-grade grade path`` with a TMPDIR of its own (inside ``folder``); its results file."""
    tmp = Path(tempfile.mkdtemp(prefix="tmpdir-", dir=folder))
    tmp.chmod(0o777)
    results = tmp / "results.json"
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "TMPDIR": str(tmp), "HOME": str(tmp), "LANG": "C.UTF-8"}
    who = {"user": user, "group": user, "extra_groups": []} if user is not None else {}
    process = subprocess.Popen(
        [str(BIN / "sdpa-grade"), "grade", str(path), "--json", str(results)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        **who,
    )
    return process, results


def checks(results: Path) -> dict[str, float]:
    """Check name -> points earned, from a results file ({} where there is none)."""
    try:
        data = json.loads(results.read_text())
    except (OSError, ValueError):
        return {}
    return {test["name"]: test["score"] for test in data.get("tests", [])}


def descendants_alive(started: dict[int, str]) -> list[str]:
    """Processes still running whose command line or working folder lies in one of the graders' TMPDIRs."""
    left = []
    folders = set(started.values())
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if any(folder in line for folder in folders):
            left.append(f"{entry.name} {line[:80]}")
    return left


def groups_left(pids: list[int]) -> list[str]:
    """Cgroups whose owner (by the name's PID) is one of the graders."""
    found = []
    for parent in CGROUPS.glob("**/"):
        if parent.name.startswith("sdpa-owner-"):
            owner = parent.name[len("sdpa-owner-") :].split("-", 1)[0].split(".")
            if len(owner) >= 2 and int(owner[-2]) in pids:
                found.append(str(parent))
    return found


def grade_round(paths: dict[str, Path], order: list[str], folder: Path, users: list[int | None]) -> list[dict]:
    """Start one grader per name in ``order`` at once, the k-th as ``users[k % len(users)]``; wait for all; what
    each gave."""
    started = [
        (name, users[k % len(users)], *start(paths[name], folder, users[k % len(users)]))
        for k, name in enumerate(order)
    ]
    done = []
    for name, user, process, results in started:
        _, errors = process.communicate(timeout=900)
        done.append(
            {
                "name": name,
                "user": os.geteuid() if user is None else user,
                "pid": process.pid,
                "code": process.returncode,
                "checks": checks(results),
                "tmp": str(results.parent),
                "stderr": errors.decode(errors="replace")[-500:],
            }
        )
    return done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--graders", type=int, default=4, help="graders at once")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--busy", type=int, default=2, help="busy processes competing for the CPUs")
    parser.add_argument("--only", default="", help="comma-separated submissions (default: all of SUBMISSIONS)")
    parser.add_argument(
        "--user",
        default=None,
        help="run every grader as this user ID; several, comma-separated, take turns in each round",
    )
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON line too")
    options = parser.parse_args()
    names = [n for n in SUBMISSIONS if not options.only or n in options.only.split(",")]
    users: list[int | None] = [int(u) for u in options.user.split(",")] if options.user else [None]
    folder = Path(tempfile.mkdtemp(prefix="sdpa-side-by-side-"))
    folder.chmod(0o755)
    busy: list[subprocess.Popen] = []
    gradings: list[dict] = []
    try:
        paths = write_submissions(folder, names)
        start_quiet = time.perf_counter()
        quiet = {}
        for name in names:
            (alone,) = grade_round(paths, [name], folder, users[:1])
            quiet[name] = alone
            print(f"  alone: {name}: exit {alone['code']}, {sum(alone['checks'].values()):g} points", file=sys.stderr)
        quiet_seconds = time.perf_counter() - start_quiet
        busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(options.busy)]
        loaded_start = time.perf_counter()
        for index in range(options.rounds):
            order = [names[(index + k) % len(names)] for k in range(options.graders)]
            begun = time.perf_counter()
            found = grade_round(paths, order, folder, users)
            for grading in found:
                grading["round"] = index + 1
                grading["same"] = grading["checks"] == quiet[grading["name"]]["checks"] and bool(grading["checks"])
            gradings += found
            print(
                f"  round {index + 1}: {time.perf_counter() - begun:.0f} s; "
                + ", ".join(
                    f"{g['name']} as {g['user']} {'same' if g['same'] else 'DIFFERENT'} (exit {g['code']})"
                    for g in found
                ),
                file=sys.stderr,
            )
        loaded_seconds = time.perf_counter() - loaded_start
    finally:
        for process in busy:
            process.kill()
            process.wait()
    everyone = [*quiet.values(), *gradings] if names else []
    time.sleep(1)
    left = descendants_alive({g["pid"]: g["tmp"] for g in everyone})
    groups = groups_left([g["pid"] for g in everyone])
    differing = [g for g in gradings if not g["same"]]
    figures = {
        "graders": options.graders,
        "rounds": options.rounds,
        "busy": options.busy,
        "user": users[0] if len(users) == 1 else users,
        "gradings": len(gradings),
        "same_as_alone": len(gradings) - len(differing),
        "grader_errors": sum(g["code"] == 3 for g in gradings),
        "other_exits": sum(g["code"] not in (0, 3) for g in gradings),
        "quiet_grader_errors": sum(g["code"] != 0 for g in quiet.values()),
        "leftover_processes": len(left),
        "leftover_cgroups": len(groups),
        "seconds_alone": round(quiet_seconds, 1),
        "seconds_side_by_side": round(loaded_seconds, 1),
    }
    print(
        f"{options.graders} graders at once x {options.rounds} rounds, {options.busy} busy processes,"
        f" user {','.join(str(os.geteuid() if u is None else u) for u in users)}:"
    )
    print(
        f"  gradings equal to the submission's grade alone, check by check:"
        f" {figures['same_as_alone']} of {len(gradings)}"
    )
    print(
        f"  grader errors (exit 3): {figures['grader_errors']}; other exits: {figures['other_exits']};"
        f" alone: {figures['quiet_grader_errors']} of {len(quiet)} not exit 0"
    )
    print(f"  processes left running: {len(left)}; cgroups left: {len(groups)}")
    print(
        f"  time: {quiet_seconds:.0f} s alone ({len(quiet)} gradings, one at a time),"
        f" {loaded_seconds:.0f} s side by side"
    )
    for grading in differing:
        alone = quiet[grading["name"]]["checks"]
        changed = sorted(k for k in set(alone) | set(grading["checks"]) if alone.get(k) != grading["checks"].get(k))
        print(
            f"  DIFFERENT: round {grading['round']} {grading['name']} as {grading['user']} (exit {grading['code']}):"
            f" {changed[:6]}"
            f" {grading['stderr'][-200:]!r}"
        )
    for line in left + groups:
        print(f"  LEFT: {line}")
    if options.json:
        print(json.dumps(figures))
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
