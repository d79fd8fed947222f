"""Memory the grading process owns and lends to a worker: inputs it can check after a call.

An ``Arena`` is an anonymous shared file (``memfd_create``) that the grader creates, seals
against any change of size, maps, and passes to the worker over the socket (SCM_RIGHTS).
Tensors are placed in it at aligned offsets and named in requests as
``{"$shm": offset, "dtype": ..., "shape": [...]}``; the worker maps the same file and calls the
student's function on views of it. What the worker did to an input is then read here, from the
grader's own mapping, and compared with the grader's own private copy: nothing the worker reports
about its inputs is believed.
"""

from __future__ import annotations

import fcntl
import mmap
import os
import socket
import time

import torch

from autograder.sandbox.student_side.wire import DTYPES

_ALIGN = 64
_NAMES = {dtype: name for name, dtype in DTYPES.items()}


class Arena:
    """Slots for tensors in one shared file; ``lend(conn)`` hands the file to the worker."""

    def __init__(self) -> None:
        self._slots: list[tuple[int, torch.dtype, tuple[int, ...]]] = []
        self.size = 0
        self._map: mmap.mmap | None = None
        self._fd: int | None = None

    def reserve(self, shape, dtype: torch.dtype) -> dict:
        """A slot for a tensor of ``shape`` and ``dtype``; its spec, for a request. Before ``open``."""
        if dtype not in _NAMES:
            raise ValueError(f"no arena slot for dtype {dtype}")
        offset = -(-self.size // _ALIGN) * _ALIGN
        nbytes = torch.Size(shape).numel() * torch.empty((), dtype=dtype).element_size()
        self._slots.append((offset, dtype, tuple(shape)))
        self.size = offset + nbytes
        return {"$shm": offset, "dtype": _NAMES[dtype], "shape": list(shape)}

    def open(self) -> Arena:
        """Create, size, seal and map the shared file, once every slot is reserved.

        Sealed before the worker ever sees it: its size can neither shrink nor grow (a truncated
        file would make our next read of the mapping a SIGBUS in the grading process), and no
        other seal can be added (F_SEAL_SEAL)."""
        self._fd = os.memfd_create("sdpa-arena", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        os.ftruncate(self._fd, max(self.size, 1))
        fcntl.fcntl(self._fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
        self._map = mmap.mmap(self._fd, max(self.size, 1))
        return self

    def view(self, spec: dict) -> torch.Tensor:
        """The grader's own view of a slot (shares memory with the worker's)."""
        dtype = DTYPES[spec["dtype"]]
        count = torch.Size(spec["shape"]).numel()
        if count == 0:
            return torch.empty(spec["shape"], dtype=dtype)
        flat = torch.frombuffer(self._map, dtype=dtype, count=count, offset=spec["$shm"])
        return flat.view(spec["shape"])

    def lend(self, conn: socket.socket) -> None:
        """Pass the file to the worker, right after the request that names it."""
        socket.send_fds(conn, [b"A"], [self._fd])

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self._map = None  # unmapped when the last view of it is gone


def place(arena: Arena, value):
    """A request's value with every CPU tensor in it given a slot: (spec-valued request value, [(spec, tensor)])."""
    placed = []

    def walk(item):
        if isinstance(item, torch.Tensor) and item.device.type == "cpu" and item.dtype in _NAMES:
            spec = arena.reserve(item.shape, item.dtype)
            placed.append((spec, item))
            return spec
        if isinstance(item, (list, tuple)):
            return type(item)(walk(x) for x in item)
        if isinstance(item, dict):
            return {key: walk(x) for key, x in item.items()}
        return item

    return walk(value), placed


def cpu_seconds(pid: int) -> float:
    """CPU time the kernel has charged to process ``pid``, all of its threads, live and exited.

    Read through the process's CPU clock (nanoseconds; ``clock_getcpuclockid``), which any
    process may read for one it can signal; else from /proc/<pid>/stat (clock ticks).
    """
    try:
        return time.clock_gettime(((~pid) << 3) | 2)  # MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)
    except OSError:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
