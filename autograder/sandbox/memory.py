"""The memory a call takes, measured from the grader's side: the peak resident set of the student's processes.

Before each request the grader resets the kernel's high-water mark of every process in the sandbox (the student's
process and all it started: ``clear_refs`` "5", VmHWM becomes VmRSS) and reads each one's resident set; after the
answer it reads the marks again. The rise, summed, is every byte of memory those processes touched and held at their
peak while the call ran, whatever made it: any thread, any library (numpy, torch, the allocator's own pools), any
dtype, until the kernel got it back; a process started during the call counts whole (all it holds, its parent's pages
included). A process that ended during the call (it is gone, or a process of the sandbox reaped it: the kernel's
count of its reaped children's page faults, ``cminflt``, moved) took memory no one can read any more: the call is
marked as having run one (``Taken.ended``). The student's code neither runs nor sees the measure: every call is reset
and read the same way, and the files are written and read by the grader, outside the sandbox.

Where the kernel refuses the reset (a grader that may not write the process's ``clear_refs``), the child is probed
before any student code runs (``Peak.probe``), and a call is not measured at all (``None``); a reset that worked then
and fails later (the process made itself non-dumpable) reads the mark since that process started, which is never less
than the call's own peak: that can only cost the student, never hide memory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from autograder.sandbox.processes import stat_fields

_REAPED_FAULTS = 8  # cminflt's index in stat_fields: the minor faults of the children it has reaped


def _status_kib(pid: int, name: str) -> int | None:
    """A ``kB`` line of /proc/PID/status (VmRSS, VmHWM) in KiB; None where it cannot be read (or the process is a
    zombie, which has no memory left)."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith(f"{name}:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def _reset(pid: int) -> bool:
    """The kernel's high-water mark of ``pid``'s resident set set back to what it holds now (True where it took)."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as handle:
            handle.write("5")
        return True
    except OSError:
        return False


def _reaped(pid: int) -> str | None:
    fields = stat_fields(pid)
    return fields[_REAPED_FAULTS] if fields is not None and len(fields) > _REAPED_FAULTS else None


def _processes(pid: int, limit: int = 4096) -> list[int]:
    """``pid`` and every process below it, as the kernel lists each thread's children (bounded by ``limit``)."""
    found, queue = [], [pid]
    while queue and len(found) < limit:
        current = queue.pop()
        found.append(current)
        try:
            tasks = list(Path(f"/proc/{current}/task").iterdir())
        except OSError:
            continue
        for task in tasks:
            try:
                queue.extend(int(child) for child in (task / "children").read_text().split())
            except (OSError, ValueError):
                continue
    return found


@dataclass(frozen=True)
class Taken:
    """What one call took: ``grown``, the bytes the sandbox's processes rose above their start at their peaks, summed;
    ``ended``, whether a process ran during the call and ended before the grader could read it."""

    grown: int
    ended: bool


@dataclass
class Peak:
    """The sandbox's peak memory, one call at a time (``start`` before the request, ``taken`` after)."""

    pid: int | None = None
    descendants: bool = True  # the processes below ``pid`` too (False: ``pid`` alone, a test's own process)
    usable: bool = False  # the reset worked on this child before any student code ran
    why: str = "not measured yet"
    _before: dict[int, tuple[int, str | None]] | None = field(default=None, repr=False)

    def probe(self, pid: int) -> None:
        """Whether the grader can reset and read ``pid``'s mark: tried once, on a fresh child, before it loads."""
        self.pid = pid
        self.usable = _reset(pid) and _status_kib(pid, "VmHWM") is not None
        self.why = "" if self.usable else f"the kernel did not let the grader reset /proc/{pid}/clear_refs"

    def _processes(self) -> list[int]:
        return _processes(self.pid) if self.descendants else [self.pid]

    def start(self) -> None:
        """Before a request: reset every process's mark and read the resident set each starts from."""
        self._before = None
        if not self.usable or self.pid is None:
            return
        before = {}
        for pid in self._processes():
            _reset(pid)  # where it fails now, the mark since the process started: never less
            rss = _status_kib(pid, "VmRSS")
            if rss is not None:
                before[pid] = (rss, _reaped(pid))
        self._before = before if self.pid in before else None

    def taken(self) -> Taken | None:
        """What the request took; None: not measured."""
        if self._before is None or self.pid is None:
            return None
        grown, ended, now = 0, False, set()
        for pid in self._processes():
            high = _status_kib(pid, "VmHWM")
            if high is None:
                continue  # a zombie: ended, and counted below by its reaper or as gone
            now.add(pid)
            start = self._before.get(pid)
            grown += max(high - start[0], 0) if start is not None else high
        for pid, (_, reaped) in self._before.items():
            ended = ended or pid not in now or (self.descendants and _reaped(pid) != reaped)
        if self.pid not in now:
            return None  # the student's process itself is gone: the call failed, nothing to measure
        return Taken(grown << 10, ended)
