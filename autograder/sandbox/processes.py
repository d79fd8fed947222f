"""The operating-system side of isolation: who a worker runs as, and finding what it left running.

The grader becomes a "child subreaper", so that every process a submission starts, daemons
included, is re-parented to it when its parent dies; ``kill_orphans`` then finds and kills them.
Where the grader runs as root and Python and torch are readable by everyone, the worker runs
as ``nobody``.
"""

from __future__ import annotations

import ctypes
import os
import signal
import stat
import sys
import sysconfig
import time
from pathlib import Path

import torch

_PR_SET_PDEATHSIG, _PR_SET_CHILD_SUBREAPER = 1, 36


def become_subreaper() -> None:
    """Orphans of the submission's processes become our children, so that close() can find them."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def die_with_parent(parent: int) -> None:
    """The kernel SIGKILLs this process when ``parent`` dies, however it dies (a batch's forked grading when the
    batch is killed); if it is gone already, exit now."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:
        os._exit(3)


def stat_fields(pid: int | str) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command name (which may hold spaces and parentheses): [0] is
    the state, [1] the parent's PID, [19] the start time; None where there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (the kernel's list, read now)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = stat_fields(entry.name)
            if fields is not None and int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


NOBODY = 65534  # the user a worker runs as where the grader can drop privileges


def readable_by_others(path: Path) -> bool:
    """Whether a user with no special rights could reach and read ``path`` (every folder above it searchable)."""
    path = Path(path).resolve()
    try:
        for folder in path.parents:
            if not folder.stat().st_mode & stat.S_IXOTH:
                return False
        return bool(path.stat().st_mode & stat.S_IROTH)
    except OSError:
        return False


def privilege_drop() -> tuple[bool, str]:
    """Whether the worker can run as ``nobody`` (we are root, and nobody can read Python and torch), and why."""
    if os.geteuid() != 0:
        return False, "the grader does not run as root"
    for needed in (Path(sys.executable), Path(torch.__file__), Path(sysconfig.get_paths()["stdlib"]) / "os.py"):
        if not readable_by_others(needed):
            return False, f"{needed} is not readable by other users"
    return True, "the worker runs as nobody"


def kill_orphans(keep: frozenset[int] = frozenset()) -> None:
    """Kill and reap every process re-parented to us (but ``keep``), as long as any remains."""
    for _ in range(50):
        orphans = [pid for pid in children(os.getpid()) if pid not in keep]
        if not orphans:
            return
        for pid in orphans:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
        time.sleep(0.01)
