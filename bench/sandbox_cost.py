"""Print what the sandbox costs per worker start: a fork from a warm parent, with and without confinement.

    .venv/bin/python bench/sandbox_cost.py [--starts 40]

Each start forks a child of a process that has imported torch (as the zygote does); the child
either confines itself (confine.enter: namespaces, mounts, Landlock, seccomp, limits) or not,
then answers through a pipe and exits. Reports the median round trip of each, and the time
confine.enter itself took in the child. Interleaved, so that the machine's load hits both alike.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# confine.py imports its neighbours as top-level modules, as the worker does
sys.path.insert(0, str(ROOT / "autograder" / "sandbox" / "student_side"))

import confine  # noqa: E402
import torch  # noqa: E402,F401 - the warm parent, as the zygote

from autograder.sandbox.readable import readable, writable  # noqa: E402
from autograder.sandbox.seccomp_policy import build  # noqa: E402

BUILT = build()  # the grader's filter, as the zygote hands it to each child
SYSCALLS = {"programs": [program.hex() for program in BUILT.programs], "built": BUILT.built}

LIMITS = {
    "memory_bytes": 4 << 30,
    "output_bytes": 256 << 10,
    "processes": 256,
    "tmp_bytes": 64 << 20,
    "tmp_inodes": 65536,
}


def start(scratch: Path, read: list[str], confined: bool) -> tuple[float, float]:
    """One child: (round trip in the parent, seconds confine.enter took in the child)."""
    out, into = os.pipe()
    began = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        inner = time.perf_counter()
        if confined:
            confine.enter(str(scratch), read, writable(), LIMITS, [], SYSCALLS)
        os.write(into, json.dumps(time.perf_counter() - inner).encode())
        os._exit(0)
    os.close(into)
    took = json.loads(os.read(out, 100))
    os.close(out)
    elapsed = time.perf_counter() - began
    os.waitpid(pid, 0)
    return elapsed, took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--starts", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sdpa-bench-") as folder:
        scratch = Path(folder) / "scratch"
        scratch.mkdir()
        (scratch / "attention.py").write_text("x = 1\n")
        lib = Path(folder) / "lib"
        lib.mkdir()
        (lib / "torch").symlink_to(Path(torch.__file__).parent)
        read = readable(lib)
        plain, confined, inside = [], [], []
        for _ in range(args.starts):
            plain.append(start(scratch, read, False)[0])
            elapsed, took = start(scratch, read, True)
            confined.append(elapsed)
            inside.append(took)
    ms = lambda values: 1000 * statistics.median(values)  # noqa: E731
    print(
        f"{args.starts} starts each, median round trip: plain fork {ms(plain):.1f} ms, "
        f"confined {ms(confined):.1f} ms; confine.enter itself {ms(inside):.1f} ms "
        f"(the sandbox costs {ms(confined) - ms(plain):.1f} ms per start)"
    )


if __name__ == "__main__":
    main()
