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
    """The groups hold memory and process caps; a group whose owner process is gone is removed at once, what still
    ran in it killed, while an empty group of a live grader (another TMPDIR, not in ours) and a group made in
    another PID namespace (whose owner this grader cannot judge) stay."""
    live = Path(tempfile.mkdtemp(prefix="sdpa-grade-"))
    try:
        groups = Cgroups(live.name, memory_bytes=1 << 30, processes=64)
        if not groups.procs:
            pytest.skip(f"no cgroups for this grader here: {groups.describe()}")
        folders = [Path(p).parent for p in groups.procs]
        limits = {f.name: f for f in folders}
        assert len(limits) == 1 and all(f.is_dir() for f in folders)
        values = [
            (f / name).read_text().strip()
            for f in folders
            for name in ("memory.limit_in_bytes", "memory.max", "pids.max")
            if (f / name).exists()
        ]
        assert str(1 << 30) in values and "64" in values
        dead = subprocess.Popen(["true"])
        dead.wait()  # a grading that was killed: its PID is gone
        parent = folders[0].parent
        namespace = os.stat("/proc/self/ns/pid").st_ino
        stale = parent / group_name(f"sdpa-grade-{uuid.uuid4().hex[:8]}", f"{namespace}.{dead.pid}.1")
        elsewhere = parent / group_name(f"sdpa-grade-{uuid.uuid4().hex[:8]}", f"{namespace + 1}.{dead.pid}.1")
        neighbour = parent / group_name(f"sdpa-grade-{uuid.uuid4().hex[:8]}")  # a live grader's, elsewhere
        for group in (stale, elsewhere, neighbour):
            group.mkdir()
        left = subprocess.Popen(["sleep", "600"], start_new_session=True)  # what a killed grading left running
        (stale / "cgroup.procs").write_text(str(left.pid))
        other = Cgroups(f"{live.name}-2", memory_bytes=1 << 30, processes=64)
        assert not stale.exists() and left.wait(timeout=10) == -9
        assert elsewhere.exists() and neighbour.exists()
        elsewhere.rmdir()
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
