"""A control group per submission, where the machine lets the grader make one: memory and processes of the whole.

``limits.memory_mb`` then caps the memory of all the submission's processes together (tmpfs
files included), and ``processes`` their number, whatever user the grader runs as. Cgroup v1
controllers (``memory``, ``pids``) are used where they are mounted, as on this project's
machines, else cgroup v2 where our cgroup delegates them. The keeper (confine.py) joins the
groups before it makes the sandbox, so everything the student starts is in them.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

_ROOT = Path("/sys/fs/cgroup")


def _own(controller: str) -> Path | None:
    """Where this process sits in the v1 hierarchy of ``controller`` (None where it is not mounted)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            mount = _ROOT / controller
            return mount / path.lstrip("/") if (mount / "cgroup.procs").exists() else None
    return None


def _own_v2() -> Path | None:
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        if line.startswith("0::"):
            path = _ROOT / line[3:].lstrip("/")
            if (_ROOT / "cgroup.controllers").exists():
                return path
    return None


def _sweep(parent: Path) -> None:
    """Remove the empty groups of gradings that were killed before they could remove their own.

    A group is named after its grading's folder (runner.py); one whose folder is gone is stale.
    """
    try:
        stale = [g for g in parent.glob("sdpa-grade-*") if not (Path(tempfile.gettempdir()) / g.name).exists()]
    except OSError:
        return
    for group in stale:
        try:
            group.rmdir()  # refused while a process is still in it
        except OSError:
            pass


class Cgroups:
    """The submission's groups: made on entry, removed on ``close``; ``procs`` are the files the keeper joins."""

    def __init__(self, name: str, *, memory_bytes: int, processes: int, owner: int | None = None) -> None:
        self.folders: list[Path] = []
        self.procs: list[str] = []
        self.reason = ""
        self.kind = ""
        try:
            self._make(name, memory_bytes, processes, owner)
        except OSError as error:
            self.close()
            self.procs, self.reason = [], f"missing ({error.strerror or error}: {getattr(error, 'filename', '')})"
        if not self.procs and not self.reason:
            self.reason = "missing (no memory and pids controllers this grader may use)"

    def _make(self, name: str, memory_bytes: int, processes: int, owner: int | None) -> None:
        memory, pids = _own("memory"), _own("pids")
        if memory is not None and pids is not None:
            settings = [(memory / name, {"memory.limit_in_bytes": memory_bytes}),
                        (pids / name, {"pids.max": processes})]
            self.kind = "cgroup v1 memory and pids controllers"
        else:
            parent = _own_v2()
            delegated = (parent / "cgroup.subtree_control").read_text().split() if parent else []
            if parent is None or not {"memory", "pids"} <= set(delegated):
                return
            settings = [(parent / name, {"memory.max": memory_bytes, "memory.swap.max": 0, "pids.max": processes})]
            self.kind = "cgroup v2 memory and pids controllers"
        for folder, values in settings:
            _sweep(folder.parent)
            folder.mkdir()
            self.folders.append(folder)
            for key, value in values.items():
                if (folder / key).exists():
                    (folder / key).write_text(str(value))
            if owner is not None:
                os.chown(folder / "cgroup.procs", owner, -1)
            self.procs.append(str(folder / "cgroup.procs"))

    def describe(self) -> str:
        """What holds the whole submission's memory and processes, for the report."""
        return self.reason or self.kind

    def close(self) -> None:
        """Remove the groups (their processes are dead by now: the sandbox's PID namespace is gone)."""
        for folder in self.folders:
            for _ in range(100):
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)
        self.folders = []
