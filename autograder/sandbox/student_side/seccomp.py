"""Install the seccomp filter the grader built (seccomp_policy.py: what it refuses, and why), as classic BPF.

The programs arrive as bytes in the child's spawn request, before any student code runs; nothing
here knows a system call number. Runs beside student code: the standard library only.
"""

from __future__ import annotations

import ctypes

_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2
_MAX_INSTRUCTIONS = 4096  # BPF_MAXINSNS


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install(programs: list[bytes]) -> None:
    """Load the programs into this thread (and every process it forks from now on); they cannot be removed. The
    kernel runs every filter loaded and takes the strictest action."""
    if not programs:
        raise OSError("no filter for this machine")
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    for code in programs:
        if not code or len(code) % 8 or len(code) > 8 * _MAX_INSTRUCTIONS:
            raise OSError(f"a filter of {len(code)} bytes is not a BPF program")
        buffer = ctypes.create_string_buffer(code, len(code))
        fprog = _SockFprog(len(code) // 8, ctypes.cast(buffer, ctypes.c_void_p))
        if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP) failed")
