"""A cgroup per submission: made with its limits, removed after, and stale ones of killed gradings swept."""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from autograder.sandbox.cgroups import Cgroups, group_name


def test_groups_carry_the_limits_and_stale_ones_are_swept():
    """The groups hold memory and process caps; an old empty group whose owner process is gone is removed, while
    an empty group of a live grader (another TMPDIR, not in ours) and a fresh one of a dead owner stay."""
    live = Path(tempfile.mkdtemp(prefix="sdpa-grade-"))
    try:
        groups = Cgroups(live.name, memory_bytes=1 << 30, processes=64)
        if not groups.procs:
            pytest.skip(f"no cgroups for this grader here: {groups.describe()}")
        folders = [Path(p).parent for p in groups.procs]
        limits = {f.name: f for f in folders}
        assert len(limits) == 1 and all(f.is_dir() for f in folders)
        values = [(f / name).read_text().strip() for f in folders
                  for name in ("memory.limit_in_bytes", "memory.max", "pids.max") if (f / name).exists()]
        assert str(1 << 30) in values and "64" in values
        dead = subprocess.Popen(["true"])
        dead.wait()  # a grading that was killed: its PID is gone
        parent = folders[0].parent
        stale = parent / f"sdpa-owner-{dead.pid}.1-sdpa-grade-{uuid.uuid4().hex[:8]}"
        fresh = parent / f"sdpa-owner-{dead.pid}.1-sdpa-grade-{uuid.uuid4().hex[:8]}"
        neighbour = parent / group_name(f"sdpa-grade-{uuid.uuid4().hex[:8]}")  # a live grader's, elsewhere
        for group in (stale, fresh, neighbour):
            group.mkdir()
        os.utime(stale, (time.time() - 120, time.time() - 120))
        other = Cgroups(f"{live.name}-2", memory_bytes=1 << 30, processes=64)
        assert not stale.exists()
        assert fresh.exists() and neighbour.exists()
        fresh.rmdir()
        neighbour.rmdir()
        other.close()
        groups.close()
        assert not any(f.exists() for f in folders)
    finally:
        live.rmdir()


def test_the_group_counts_the_cpu_time_of_every_process_in_it():
    """A process in the group forks a helper that burns 0.3 s of CPU: the group's count has it, helper included;
    a group nobody joined is known to count nothing."""
    live = Path(tempfile.mkdtemp(prefix="sdpa-grade-"))
    groups = Cgroups(live.name, memory_bytes=1 << 30, processes=64)
    try:
        if groups.cpu_seconds() is None:
            pytest.skip(f"no CPU-time cgroup for this grader here: {groups.describe()}")
        assert not groups.counts(os.getpid())  # nobody joined yet: the timing check would not use this clock
        before = groups.cpu_seconds()
        pid = os.fork()
        if pid == 0:  # joins, as the keeper does, then leaves the work to a helper of its own
            for procs in groups.procs:
                Path(procs).write_text(str(os.getpid()))
            helper = os.fork()
            if helper == 0:
                while time.process_time() < 0.3:
                    pass
                os._exit(0)
            os.waitpid(helper, 0)
            os._exit(0)
        os.waitpid(pid, 0)
        assert groups.cpu_seconds() - before >= 0.3
    finally:
        groups.close()
        live.rmdir()
