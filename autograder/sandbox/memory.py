"""The memory a call takes, measured from the grader's side: the student's process's peak resident set.

Before each request the grader resets the kernel's high-water mark of the student's process (``clear_refs`` "5":
VmHWM becomes VmRSS) and reads its resident set; after the answer it reads the mark again. The difference is every
byte of memory the process touched and held at its peak while the call ran, whatever made it: any thread, any
library (numpy, torch, the allocator's own pools), any dtype, until the kernel got it back. The student's code
neither runs nor sees the measure: every call is reset and read the same way, and the files are written and read by
the grader, outside the sandbox.

Where the kernel refuses the reset (a grader that may not write the process's ``clear_refs``), the child is probed
before any student code runs (``Peak.probe``), and a call is not measured at all (``None``); a reset that worked then
and fails later (the process made itself non-dumpable) reads the mark since the process started, which is never less
than the call's own peak: that can only cost the student, never hide memory.
"""

from __future__ import annotations

from dataclasses import dataclass


def _status_kib(pid: int, field: str) -> int | None:
    """A ``kB`` line of /proc/PID/status (VmRSS, VmHWM) in KiB; None where it cannot be read."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith(f"{field}:"):
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


@dataclass
class Peak:
    """The student's process's peak memory, one call at a time (``start`` before the request, ``grown`` after)."""

    pid: int | None = None
    usable: bool = False  # the reset worked on this child before any student code ran
    why: str = "not measured yet"
    _before: int | None = None

    def probe(self, pid: int) -> None:
        """Whether the grader can reset and read ``pid``'s mark: tried once, on a fresh child, before it loads."""
        self.pid = pid
        self.usable = _reset(pid) and _status_kib(pid, "VmHWM") is not None
        self.why = "" if self.usable else f"the kernel did not let the grader reset /proc/{pid}/clear_refs"

    def start(self) -> None:
        """Before a request: reset the mark and read the resident set it starts from."""
        self._before = None
        if self.usable and self.pid is not None:
            _reset(self.pid)  # where it fails now, the mark since the process started: never less
            self._before = _status_kib(self.pid, "VmRSS")

    def grown(self) -> int | None:
        """Bytes the process's resident set rose above its start, at its peak during the request; None: not
        measured."""
        if self._before is None or self.pid is None:
            return None
        high = _status_kib(self.pid, "VmHWM")
        return None if high is None else max(high - self._before, 0) << 10
