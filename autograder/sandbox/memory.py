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

A peak is what a call *adds*: memory taken before the call (at import, or by an earlier call) and written again during
it adds nothing, and a submission that reserves the room for the (T_q, T_k) matrix at import and fills it in place would
keep its peak flat. So before every request the grader also clears the kernel's accessed bits of the anonymous pages of
those processes (``clear_refs`` "2": the heap and every anonymous mapping, where any allocator keeps its memory), and,
for a call whose checker asks (``taken(pages=True)``, the memory check's calls: the reading changes nothing the worker
could see), counts the pages accessed since (``/proc/PID/smaps``, ``Referenced``): ``Taken.touched``, the memory the
call read or wrote, wherever and whenever it was taken. A mapping of a file is not cleared: a shared one (the call's
inputs in the grader's memory, made for each request; a file the student maps) counts every page it accessed since it
was mapped, and a private one (the libraries' code and data) only the copies written into it since the child was probed
(the smaller of ``Referenced`` and ``Anonymous``, less the copies it held then: the libraries' relocated data, 5 MiB of
pages whose bits are never cleared), which no honest call makes. Reading every page table costs tens of milliseconds in
a process that holds torch, so it is done only where it is asked; clearing the anonymous pages, on every call alike,
about a third of that. The kernel offers no cheaper count of written pages here (``CONFIG_MEM_SOFT_DIRTY`` is off in the
kernels this was measured on, and ``PAGEMAP_SCAN``'s written bit needs the process's own userfaultfd); the accessed bits
need no more permission than the reset of the peak, which is probed with it.

Both see only what is mapped into a process when the call ends, and the peak only above where the call found it. A
call that frees memory held before it (room taken at import, or taken again between calls by a thread of its own)
and builds the matrix there, giving it all back before it returns, rises above nothing and leaves no page to count; a
call that keeps the matrix in memory never mapped (a tmpfs file or a memfd, written with ``pwrite`` and read back) maps
nothing. So before and after every call the grader also reads the sandbox's memory cgroup's ``memory.stat``
(``stat``: cgroup v1's ``pgpgin`` and ``pgpgout``, the pages the kernel charged to the group and took back from it):
``Taken.charged``, the more of the two, is every page the call took, whatever holds it (any process, a tmpfs file, a
memfd) and whatever it freed first, and every page it gave back, whenever it was taken. The group and its file are
the grader's, outside the sandbox. The worker keeps what a call frees for that call's own later blocks
(``recording._keep_freed``), so that an honest call that frees and takes its blocks again is charged about its peak.
cgroup v2's ``memory.stat`` has no such count: there (and without a group) ``charged`` is None and those ways go unseen.
The count is of charging events, and a huge page is one (the kernel's rule), so memory taken in transparent huge pages
is counted short where the machine grants them.

Kernel memory is in no page count at all: a call that parks the matrix in pipe buffers (many pipes, each grown with
``F_SETPIPE_SZ``) or in the queues of Unix socket pairs, and reads it back, maps nothing, touches no page of its own
and is charged no user page. cgroup v1 charges that memory to the group's kernel-memory counter
(``memory.kmem.usage_in_bytes``, pipe and socket buffers as written, page tables and kernel objects too), whose
high-water mark (``memory.kmem.max_usage_in_bytes``) the grader may set back to the usage now by writing to it. So when
the child is probed, before any student code runs, the grader reads that usage (the keeper's, the sandbox's and the
worker's own kernel memory: the floor); before every call it resets the mark and reads the usage; after the answer it
reads the mark: ``Taken.kernel`` is the mark above the lesser of the floor and the usage at the call's start, the
most kernel memory the sandbox held while the call ran beyond what it held before any student code ran, so that
buffers filled at import or by an earlier call and drained and filled again during this one count too. Honest calls
hold next to none (page tables: 2 MiB a GiB mapped). The files are the grader's, outside the sandbox: the worker can
neither read nor reset them. cgroup v2 has no high-water mark of kernel memory alone (``memory.peak`` is all the
group's memory, resettable only from Linux 6.12; ``memory.stat``'s ``kernel`` and ``sock`` say what is held now, not
during the call), and nothing is read there (this project's machines run cgroup v1, where it could be tested):
``kernel`` is None, and a matrix parked in kernel buffers and given back before the call returns goes unseen.
"""

from __future__ import annotations

import os
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


def _clear_accessed(pid: int) -> bool:
    """The kernel's accessed bits of ``pid``'s anonymous pages cleared (True where it took)."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as handle:
            handle.write("2")
        return True
    except OSError:
        return False


def _mappings(pid: int) -> list[tuple[bytes, bool, int, int]] | None:
    """Each mapping of ``pid`` as /proc/PID/smaps lists it: its start address, whether it maps a file privately, and
    its ``Referenced`` and ``Anonymous`` KiB; None where the file cannot be read."""
    try:
        with open(f"/proc/{pid}/smaps", "rb") as handle:
            text = handle.read()
    except OSError:
        return None
    found: list[list] = []
    try:
        for line in text.splitlines():
            if line.startswith(b"Referenced:"):
                found[-1][2] = int(line.split()[1])
            elif line.startswith(b"Anonymous:"):
                found[-1][3] = int(line.split()[1])
            elif line[:1] in b"0123456789abcdef" and b"-" in line.split(maxsplit=1)[0]:  # a mapping's header
                parts = line.split(maxsplit=5)
                path = parts[5].strip() if len(parts) > 5 else b""
                private_file = parts[1][3:4] == b"p" and path.startswith(b"/") and not path.startswith(b"/memfd:")
                found.append([parts[0].split(b"-")[0], private_file, 0, 0])
    except (ValueError, IndexError):
        return None
    return [tuple(mapping) for mapping in found]


def _copied(pid: int) -> dict[bytes, int]:
    """The KiB of each privately mapped file of ``pid`` already copied into the process (its ``Anonymous``), by start
    address: the libraries' relocated data, written once when they were loaded, before any student code ran."""
    return {start: anonymous for start, private_file, _, anonymous in _mappings(pid) or () if private_file}


def _touched_kib(pid: int, copied: dict[bytes, int]) -> int | None:
    """The KiB of ``pid``'s pages accessed since its anonymous pages' bits were cleared: a privately mapped file's
    mapping counts only its copies made since ``copied`` was read (the smaller of ``Referenced`` and ``Anonymous``,
    less what it held then; its bits are never cleared), any other mapping its ``Referenced`` whole; None where
    /proc/PID/smaps cannot be read."""
    mappings = _mappings(pid)
    if mappings is None:
        return None
    total = 0
    for start, private_file, referenced, anonymous in mappings:
        total += max(min(referenced, anonymous) - copied.get(start, 0), 0) if private_file else referenced
    return total


def _charges(stat: Path | None) -> tuple[int, int] | None:
    """The pages the kernel has charged to the memory cgroup whose ``memory.stat`` is ``stat`` and taken back from it
    since the group was made (``pgpgin``, ``pgpgout``); None where there is no such file or it lacks them."""
    if stat is None:
        return None
    try:
        fields = dict(line.split(maxsplit=1) for line in stat.read_text().splitlines())
        return int(fields["pgpgin"]), int(fields["pgpgout"])
    except (OSError, ValueError, KeyError):
        return None


def _kernel_usage(group: Path | None, name: str = "usage_in_bytes") -> int | None:
    """The bytes of kernel memory charged to the memory cgroup ``group`` now (``usage_in_bytes``) or at its high-water
    mark (``max_usage_in_bytes``); None where there is no such group or file."""
    if group is None:
        return None
    try:
        return int((group / f"memory.kmem.{name}").read_text())
    except (OSError, ValueError):
        return None


def _reset_kernel_mark(group: Path) -> bool:
    """The high-water mark of ``group``'s kernel memory set back to what it holds now (True where it took)."""
    try:
        (group / "memory.kmem.max_usage_in_bytes").write_text("0")
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
    ``ended``, whether a process ran during the call and ended before the grader could read it; ``touched``, the bytes
    of their pages the call read or wrote, summed, wherever and whenever those pages were taken (None: not read);
    ``charged``, the more of the bytes the kernel charged to the sandbox's memory cgroup while the call ran and those
    it took back (None: no such group); ``kernel``, the most kernel memory the group held while the call ran, above the
    least it held at the call's start or when its process was probed, before any student code ran (None: no group that
    counts it)."""

    grown: int
    ended: bool
    touched: int | None = None
    charged: int | None = None
    kernel: int | None = None


@dataclass
class Peak:
    """The sandbox's peak memory, one call at a time (``start`` before the request, ``taken`` after)."""

    pid: int | None = None
    descendants: bool = True  # the processes below ``pid`` too (False: ``pid`` alone, a test's own process)
    accessed: bool = True  # clear and count the pages calls touch (False: a test's own process)
    stat: Path | None = None  # the sandbox's memory cgroup's memory.stat (cgroup v1), where it has one
    kernel: Path | None = None  # the sandbox's memory cgroup, where it counts its kernel memory (cgroup v1's kmem)
    usable: bool = False  # the reset worked on this child before any student code ran
    why: str = "not measured yet"
    _before: dict[int, tuple[int, str | None]] | None = field(default=None, repr=False)
    _copied: dict[bytes, int] = field(default_factory=dict, repr=False)  # the libraries' copied pages, at the probe
    _charges: tuple[int, int] | None = field(default=None, repr=False)  # the group's pgpgin and pgpgout at start
    _kernel_floor: int | None = field(default=None, repr=False)  # the group's kernel memory at the probe
    _kernel_start: int | None = field(default=None, repr=False)  # the least of that and its kernel memory at start

    def probe(self, pid: int) -> None:
        """Whether the grader can reset and read ``pid``'s mark: tried once, on a fresh child, before it loads."""
        self.pid = pid
        peak = _reset(pid) and _status_kib(pid, "VmHWM") is not None
        if self.accessed:
            self._copied = _copied(pid)
            peak = peak and _clear_accessed(pid) and _touched_kib(pid, self._copied) is not None
        self.usable = peak
        # the kernel memory the group holds before any student code runs: its keeper's, the sandbox's, the worker's
        self._kernel_floor = _kernel_usage(self.kernel) if self.kernel and _reset_kernel_mark(self.kernel) else None
        self.why = "" if self.usable else f"the kernel did not let the grader use /proc/{pid}/clear_refs and smaps"

    def _processes(self) -> list[int]:
        return _processes(self.pid) if self.descendants else [self.pid]

    def start(self) -> None:
        """Before a request: reset every process's mark and read the resident set each starts from."""
        self._before = None
        if not self.usable or self.pid is None:
            return
        self._charges = _charges(self.stat)
        self._kernel_start = None
        if self._kernel_floor is not None:
            _reset_kernel_mark(self.kernel)  # where it fails now, the mark since it last took: never less
            now = _kernel_usage(self.kernel)
            self._kernel_start = None if now is None else min(now, self._kernel_floor)
        before = {}
        for pid in self._processes():
            _reset(pid)  # where it fails now, the mark since the process started: never less
            if self.accessed:
                _clear_accessed(pid)  # where it fails now, every page accessed since it started: never less
            rss = _status_kib(pid, "VmRSS")
            if rss is not None:
                before[pid] = (rss, _reaped(pid))
        self._before = before if self.pid in before else None

    def taken(self, pages: bool = False) -> Taken | None:
        """What the request took (``pages``: and the pages it touched, where this measure counts them); None: not
        measured."""
        pages = pages and self.accessed
        if self._before is None or self.pid is None:
            return None
        grown, touched, ended, now = 0, 0, False, set()
        for pid in self._processes():
            high = _status_kib(pid, "VmHWM")
            if high is None:
                continue  # a zombie: ended, and counted below by its reaper or as gone
            now.add(pid)
            start = self._before.get(pid)
            grown += max(high - start[0], 0) if start is not None else high
            if pages:
                accessed = _touched_kib(pid, self._copied)
                touched += accessed if accessed is not None else high  # unreadable now: all it holds, never less
        for pid, (_, reaped) in self._before.items():
            ended = ended or pid not in now or (self.descendants and _reaped(pid) != reaped)
        if self.pid not in now:
            return None  # the student's process itself is gone: the call failed, nothing to measure
        charges = _charges(self.stat)
        charged = None
        if charges is not None and self._charges is not None:
            charged = max(now_ - then for now_, then in zip(charges, self._charges)) * os.sysconf("SC_PAGE_SIZE")
        mark = _kernel_usage(self.kernel, "max_usage_in_bytes") if self._kernel_start is not None else None
        kernel = None if mark is None else max(mark - self._kernel_start, 0)
        return Taken(grown << 10, ended, touched << 10 if pages else None, charged, kernel)
