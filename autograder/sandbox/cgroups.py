"""A control group per submission, where the machine lets the grader make one:
memory, processes, CPU share and CPU time of the whole.

``limits.memory_mb`` then caps the memory of all the submission's processes together (tmpfs
files included), and ``processes`` their number, whatever user the grader runs as; the kernel
counts the CPU time of all of them (``cpu_seconds``: the timing check's clock, helpers and
forked children included). Where the ``cpu`` controller can be used, the whole submission gets
one CPU weight, the kernel's default for one process (``cpu.shares`` 1024 in v1, ``cpu.weight``
100 in v2): however many processes it starts, together they get no more of a busy CPU than one
honest student's process beside them, so a student's spinning helpers slow only that student.
Cgroup v1 controllers (``memory``, ``pids``, ``cpu``, ``cpuacct``) are used where they are
mounted, as on this project's machines, else cgroup v2 where our cgroup delegates memory and
pids (and cpu, which the grader enables for its groups where the kernel lets it; every v2 group
counts its CPU time in ``cpu.stat``). The keeper (confine.py) joins the groups before it makes
the sandbox, so everything the student starts is in them.

A group is named after the grading process that made it (PID namespace, PID, start time): any
grader, whatever its user or TMPDIR, can tell whether the owner still runs. When a grading ends,
however it ends, everything the kernel lists in its groups is killed and the groups removed (by
the grading itself, by the batch that forked it, or, after a SIGKILL, by the next grading on the
machine, which sweeps the groups whose owner is gone).
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from autograder.sandbox.processes import stat_fields

_ROOT = Path("/sys/fs/cgroup")
_PREFIX = "sdpa-owner-"
# the whole submission's CPU weight: the kernel's default for a group, which is also one nice-0 process's weight
CPU_SHARES = ("cpu.shares", 1024)  # cgroup v1
CPU_WEIGHT = ("cpu.weight", 100)  # cgroup v2


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
    fields = stat_fields(pid)
    return None if fields is None else fields[19]


def _pid_namespace() -> str:
    """This process's PID namespace (the inode of /proc/self/ns/pid): PIDs are judged only inside it."""
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return "0"


def owner(pid: int | None = None) -> str:
    """Who owns the groups process ``pid`` (this one by default) makes: its PID namespace, PID and start time,
    which name one process for the machine's whole uptime (a PID reused later has another start time)."""
    pid = os.getpid() if pid is None else pid
    return f"{_pid_namespace()}.{pid}.{_start_time(pid)}"


def group_name(name: str, owned_by: str | None = None) -> str:
    """The group's name: its owner (``owner()``; this process by default), then ``name``, so any grader can tell
    whether the group's owner still runs, whatever its TMPDIR or user."""
    return f"{_PREFIX}{owned_by or owner()}-{name}"


def _alive(pid: int, started: str) -> bool:
    """Whether process ``pid`` with that start time may still run; True whenever that cannot be ruled out
    (a /proc that hides other users' processes shows nothing, but the kernel still says the PID exists)."""
    now = _start_time(pid)
    if now is not None:
        return now == started
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _stale(group: Path) -> bool:
    """A group whose owner process is certainly gone: in our PID namespace, no process has its PID and start time.

    A group made in another PID namespace (another container sharing the hierarchy) is never judged here."""
    try:
        fields = group.name[len(_PREFIX) :].split("-", 1)[0].split(".")
        namespace, pid, started = fields if len(fields) == 3 else [_pid_namespace(), *fields]  # PID.START: ours
        return namespace == _pid_namespace() and not _alive(int(pid), started)
    except ValueError:
        return False


def kill_group(group: Path, *, seconds: float = 5.0) -> bool:
    """SIGKILL every process the kernel lists in ``group`` until none is left (``cgroup.kill`` where the kernel
    has it); True when the group is empty. A process that forks meanwhile is caught on the next pass."""
    deadline = time.monotonic() + seconds
    kill = group / "cgroup.kill"
    while True:
        try:
            pids = [int(p) for p in (group / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return True  # the group is gone
        if not pids:
            return True
        if time.monotonic() > deadline:
            return False
        try:  # cgroup v2 (Linux 5.14 on): the kernel kills the whole group at once
            if kill.exists():
                kill.write_text("1")
                pids = []
        except OSError:
            pass
        for pid in pids:  # cgroup v1: each process the kernel lists
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.005)


def _sweep(parent: Path) -> None:
    """Remove the groups of gradings that were killed before they could remove their own, and kill what is
    still running in them (a submission's processes outlive their grader only where namespaces were missing).

    Only a dead grading leaves a group whose owner process is gone: another grader's live group is never
    touched, whatever its temporary folder, user or PID namespace.
    """
    try:
        stale = [g for g in parent.glob(f"{_PREFIX}*") if _stale(g)]
    except OSError:
        return
    for group in stale:
        remove(group)


def _enable_cpu(parent: Path) -> bool:
    """Whether the cpu controller is now on for the groups made under ``parent`` (cgroup v2): the grader asks the
    kernel to enable it where ``parent`` has it but does not pass it on; the kernel refuses where processes live in
    ``parent`` itself (the grader's own, as a rule) or where the grader may not write there."""
    try:
        if "cpu" not in (parent / "cgroup.controllers").read_text().split():
            return False
        (parent / "cgroup.subtree_control").write_text("+cpu")
        return "cpu" in (parent / "cgroup.subtree_control").read_text().split()
    except OSError:
        return False


def remove(group: Path) -> None:
    """Kill what runs in ``group``, then remove it; never raises."""
    kill_group(group)
    for _ in range(100):
        try:
            group.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.01)


def release(owned_by: str) -> None:
    """Kill every process in the groups of the grading ``owned_by`` (``owner()`` of a process that has ended, a
    batch's forked grading), and remove the groups: whatever way that grading ended, nothing it ran outlives it."""
    parents = {p for p in (_own("memory"), _own("pids"), _own("cpu"), _own("cpuacct"), _own_v2()) if p is not None}
    for parent in parents:
        try:
            groups = list(parent.glob(f"{_PREFIX}{owned_by}-*"))
        except OSError:
            continue
        for group in groups:
            remove(group)


class Cgroups:
    """The submission's groups: made on entry, removed on ``close``; ``procs`` are the files the keeper joins."""

    def __init__(self, name: str, *, memory_bytes: int, processes: int, owner: int | None = None) -> None:
        self.folders: list[Path] = []
        self.procs: list[str] = []
        self.reason = ""
        self.kind = ""
        self._usage: tuple[Path, str] | None = None  # the file that counts the whole group's CPU time, and its unit
        self._weight: tuple[Path, str, int] | None = None  # the group holding the CPU weight, its file and value
        try:
            self._make(name, memory_bytes, processes, owner)
        except OSError as error:
            self.close()
            self.procs, self.reason = [], f"missing ({error.strerror or error}: {getattr(error, 'filename', '')})"
        if not self.procs and not self.reason:
            self.reason = "missing (no memory and pids controllers this grader may use)"

    def _make(self, name: str, memory_bytes: int, processes: int, owner: int | None) -> None:
        name = group_name(name)
        memory, pids, cpu, cpuacct = _own("memory"), _own("pids"), _own("cpu"), _own("cpuacct")
        if memory is not None and pids is not None:
            settings = [
                (memory / name, {"memory.limit_in_bytes": memory_bytes}),
                (pids / name, {"pids.max": processes}),
            ]
            used = ["memory", "pids"]
            if cpu is not None:
                settings.append((cpu / name, dict([CPU_SHARES])))
                self._weight = (cpu / name, *CPU_SHARES)
                used.append("cpu")
            if cpuacct is not None:
                settings.append((cpuacct / name, {}))
                self._usage = (cpuacct / name / "cpuacct.usage", "ns")
                used.append("cpuacct")
            self.kind = f"cgroup v1 {', '.join(used[:-1])} and {used[-1]} controllers"
        else:
            parent = _own_v2()
            delegated = (parent / "cgroup.subtree_control").read_text().split() if parent else []
            if parent is None or not {"memory", "pids"} <= set(delegated):
                return
            values = {"memory.max": memory_bytes, "memory.swap.max": 0, "pids.max": processes}
            if "cpu" in delegated or _enable_cpu(parent):
                values[CPU_WEIGHT[0]] = CPU_WEIGHT[1]
                self._weight = (parent / name, *CPU_WEIGHT)
            settings = [(parent / name, values)]
            self._usage = (parent / name / "cpu.stat", "usage_usec")  # a core file of every v2 group
            used = "memory, pids and cpu" if self._weight else "memory and pids"
            self.kind = f"cgroup v2 {used} controllers, CPU time from cpu.stat"
        # a hierarchy that holds several controllers (cpu and cpuacct mounted together) is one group, made once
        merged: dict[Path, tuple[Path, dict]] = {}
        for folder, values in settings:
            key = folder.parent.resolve() / folder.name
            merged[key] = (merged[key][0], {**merged[key][1], **values}) if key in merged else (folder, values)
        for folder, values in merged.values():
            _sweep(folder.parent)
            folder.mkdir()
            self.folders.append(folder)
            for key, value in values.items():
                if (folder / key).exists():
                    (folder / key).write_text(str(value))
            if owner is not None:
                os.chown(folder / "cgroup.procs", owner, -1)
            self.procs.append(str(folder / "cgroup.procs"))

    @property
    def memory_stat(self) -> Path | None:
        """The submission's memory group's ``memory.stat`` where it counts the pages charged to the group and taken
        back (cgroup v1's ``pgpgin`` and ``pgpgout``, sandbox/memory.py); None otherwise (cgroup v2 has no such
        count, and no group no file)."""
        if not self.procs:
            return None
        for folder in self.folders:
            stat = folder / "memory.stat"
            try:
                if "pgpgin " in stat.read_text():
                    return stat
            except OSError:
                continue
        return None

    @property
    def kernel_memory(self) -> Path | None:
        """The submission's memory group where it counts the kernel memory charged to the group (cgroup v1's
        ``memory.kmem.usage_in_bytes`` and its resettable high-water mark ``memory.kmem.max_usage_in_bytes``: pipe
        and socket buffers, page tables, kernel objects; sandbox/memory.py); None otherwise (cgroup v2 has no
        resettable mark of it, and no group no files)."""
        if not self.procs:
            return None
        for folder in self.folders:
            if all((folder / f"memory.kmem.{name}").exists() for name in ("usage_in_bytes", "max_usage_in_bytes")):
                return folder
        return None

    @property
    def cpu_group(self) -> Path | None:
        """The group whose CPU weight the whole submission shares; None where the cpu controller was not usable."""
        return self._weight[0] if self._weight and self.procs else None

    @property
    def cpu_weight(self) -> tuple[str, int] | None:
        """The file that holds the submission's CPU weight in ``cpu_group``, and the weight written there."""
        return self._weight[1:] if self._weight and self.procs else None

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

    def kill(self) -> None:
        """Kill every process in the submission's groups (the kernel's list, not the PIDs the grader saw)."""
        for procs in self.procs[:1]:  # every process is in each of the groups: one list is the whole
            kill_group(Path(procs).parent)

    def close(self) -> None:
        """Kill whatever still runs in the groups, then remove them."""
        for folder in self.folders:
            remove(folder)
        self.folders = []
