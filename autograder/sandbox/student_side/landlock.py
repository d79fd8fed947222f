"""Landlock (Linux 5.13+) through its three system calls: the files a process may open, TCP, signals.

A small ctypes wrapper of ``landlock_create_ruleset``, ``landlock_add_rule`` and
``landlock_restrict_self`` (include/uapi/linux/landlock.h). ``restrict`` handles every access
right the running kernel's ABI knows, grants read on some paths and read-write on others, denies
every TCP bind and connect (ABI 4), and scopes signals and abstract unix sockets to the sandbox
(ABI 6). Runs beside student code: the standard library only.
"""

from __future__ import annotations

import ctypes
import os
import stat
import struct

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446  # the same number on every architecture
_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_ALL_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1}  # ABI 2 adds REFER, 3 TRUNCATE, 5 IOCTL_DEV
_FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | (1 << 14) | (1 << 15)  # the rights a rule on a file may carry
_TCP_BIND, _TCP_CONNECT = 1, 2
_SCOPE_ABSTRACT_UNIX, _SCOPE_SIGNAL = 1, 2
_MAKE_CHAR, _MAKE_BLOCK = 1 << 6, 1 << 11

READ = READ_FILE | READ_DIR

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _syscall(*args) -> int:
    result = _libc.syscall(*args)
    if result < 0:
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error))
    return result


def abi() -> int:
    """The Landlock ABI version of the running kernel; 0 where Landlock is missing or disabled."""
    try:
        return _syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_VERSION))
    except OSError:
        return 0


def _handled(version: int) -> int:
    fs = _ALL_BY_ABI.get(min(version, 3), (1 << 15) - 1)
    return fs | (1 << 15) if version >= 5 else fs


def restrict(read: list[str], write: list[str]) -> int:
    """Confine this thread and its future children to reading ``read`` and writing ``write``; return the ABI.

    Paths that do not exist are skipped. From ABI 4 no TCP port may be bound or connected; from
    ABI 6 no signal may be sent, and no abstract unix socket reached, outside the sandbox.
    """
    version = abi()
    if version < 1:
        raise OSError("Landlock is not available in this kernel")
    handled = _handled(version)
    net = _TCP_BIND | _TCP_CONNECT if version >= 4 else 0
    scoped = _SCOPE_ABSTRACT_UNIX | _SCOPE_SIGNAL if version >= 6 else 0
    attr = struct.pack("=QQQ", handled, net, scoped)
    size = 24 if version >= 6 else 16 if version >= 4 else 8
    buffer = ctypes.create_string_buffer(attr[:size], size)
    ruleset = _syscall(_CREATE_RULESET, buffer, ctypes.c_size_t(size), ctypes.c_uint32(0))
    try:
        writable = handled & ~(EXECUTE | _MAKE_CHAR | _MAKE_BLOCK)
        for paths, rights in ((read, READ), (write, writable)):
            for path in paths:
                _add_path(ruleset, path, rights & handled)
        if _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
        _syscall(_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0))
    finally:
        os.close(ruleset)
    return version


def _add_path(ruleset: int, path: str, rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            rights &= _FILE_RIGHTS
        rule = ctypes.create_string_buffer(struct.pack("=Qi", rights, fd), 12)
        _syscall(_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH), rule, ctypes.c_uint32(0))
    finally:
        os.close(fd)
