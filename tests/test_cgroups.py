"""A cgroup per submission: made with its limits, removed after, and stale ones of killed gradings swept."""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path

import pytest

from autograder.sandbox.cgroups import Cgroups


def test_groups_carry_the_limits_and_stale_ones_are_swept():
    """The groups hold memory and process caps; an empty group whose grading folder is gone is removed."""
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
        stale = folders[0].parent / f"sdpa-grade-{uuid.uuid4().hex[:8]}"  # its grading was killed: no folder
        stale.mkdir()
        other = Cgroups(f"{live.name}-2", memory_bytes=1 << 30, processes=64)
        assert not stale.exists()
        other.close()
        groups.close()
        assert not any(f.exists() for f in folders)
    finally:
        live.rmdir()
