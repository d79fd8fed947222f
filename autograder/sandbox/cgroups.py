"""A control group per submission, where the machine lets the grader make one: memory, processes and CPU time of the whole.

``limits.memory_mb`` then caps the memory of all the submission's processes together (tmpfs
files included), and ``processes`` their number, whatever user the grader runs as; the kernel
counts the CPU time of all of them (``cpu_seconds``: the timing check's clock, helpers and
forked children included). Cgroup v1 controllers (``memory``, ``pids``, ``cpuacct``) are used
where they are mounted, as on this project's machines, else cgroup v2 where our cgroup
delegates memory and pids (every v2 group counts its CPU time in ``cpu.stat``). The keeper
(confine.py) joins the groups before it makes the sandbox, so everything the student starts is
in them.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

_ROOT = Path("/sys/fs/cgroup")
_PREFIX = "sdpa-owner-"
_GRACE = 60.0  # seconds: a group younger than this is never swept, whoever owns it


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


def _start_time(pid: int) -> str | None:
    """The kernel's start time of process ``pid`` (clock ticks since boot), or None where there is no such process.

    With the PID it names one process for the machine's whole uptime: a PID reused later has another start time.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def group_name(name: str) -> str:
    """The group's name: the grading process's PID and start time, then ``name``, so any grader can tell whether
    the group's owner still runs, whatever its TMPDIR or user."""
    pid = os.getpid()
    return f"{_PREFIX}{pid}.{_start_time(pid)}-{name}"


def _stale(group: Path) -> bool:
    """A group whose owner process is gone (by PID and start time), made more than ``_GRACE`` seconds ago."""
    try:
        owner = group.name[len(_PREFIX):].split("-", 1)[0]
        pid, started = owner.split(".", 1)
        if _start_time(int(pid)) == started:
            return False
        return time.time() - group.stat().st_mtime > _GRACE
    except (ValueError, OSError):
        return False


def _sweep(parent: Path) -> None:
    """Remove the empty groups of gradings that were killed before they could remove their own.

    Only a dead grading leaves a group whose owner process is gone: another grader's live group is never
    touched, whatever its temporary folder (a group with processes in it is refused by the kernel anyway).
    """
    try:
        stale = [g for g in parent.glob(f"{_PREFIX}*") if _stale(g)]
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
        self._usage: tuple[Path, str] | None = None  # the file that counts the whole group's CPU time, and its unit
        try:
            self._make(name, memory_bytes, processes, owner)
        except OSError as error:
            self.close()
            self.procs, self.reason = [], f"missing ({error.strerror or error}: {getattr(error, 'filename', '')})"
        if not self.procs and not self.reason:
            self.reason = "missing (no memory and pids controllers this grader may use)"

    def _make(self, name: str, memory_bytes: int, processes: int, owner: int | None) -> None:
        name = group_name(name)
        memory, pids, cpuacct = _own("memory"), _own("pids"), _own("cpuacct")
        if memory is not None and pids is not None:
            settings = [(memory / name, {"memory.limit_in_bytes": memory_bytes}),
                        (pids / name, {"pids.max": processes})]
            self.kind = "cgroup v1 memory and pids controllers"
            if cpuacct is not None:
                settings.append((cpuacct / name, {}))
                self._usage = (cpuacct / name / "cpuacct.usage", "ns")
                self.kind = "cgroup v1 memory, pids and cpuacct controllers"
        else:
            parent = _own_v2()
            delegated = (parent / "cgroup.subtree_control").read_text().split() if parent else []
            if parent is None or not {"memory", "pids"} <= set(delegated):
                return
            settings = [(parent / name, {"memory.max": memory_bytes, "memory.swap.max": 0, "pids.max": processes})]
            self._usage = (parent / name / "cpu.stat", "usage_usec")  # a core file of every v2 group
            self.kind = "cgroup v2 memory and pids controllers, CPU time from cpu.stat"
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

    def cpu_seconds(self) -> float | None:
        """CPU time the kernel has charged to every process of the submission so far; None without such a group
        (decided when the groups are made, so one sandbox never mixes two clocks). A group that cannot be read
        after that raises: the grader's own failure."""
        if self._counter is None:
            return None
        path, unit = self._counter
        text = path.read_text()
        if unit == "ns":
            return int(text) / 1e9
        fields = dict(line.split() for line in text.splitlines() if line.count(" ") == 1)
        return int(fields[unit]) / 1e6

    def counts(self, pid: int) -> bool:
        """Whether the CPU-time group holds process ``pid`` (read here, from the kernel): the keeper may have
        failed to join, and a group nobody is in counts nothing."""
        return self._counter is not None and str(pid) in self._counter[0].with_name("cgroup.procs").read_text().split()

    @property
    def _counter(self) -> tuple[Path, str] | None:
        """The CPU-time file and its unit, where the groups were made with one."""
        return self._usage if self.procs else None

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
