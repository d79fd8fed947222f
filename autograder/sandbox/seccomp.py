"""A seccomp filter for what namespaces and Landlock leave open, as a classic BPF program.

Denied with EPERM: running programs (execve, execveat), tracing and reading other processes
(ptrace, process_vm_readv/writev, pidfd_getfd, kcmp), io_uring (whose requests bypass this
filter), SysV IPC and POSIX message queues, keyrings, bpf, perf_event_open, userfaultfd,
opening files by handle, mounting and new namespaces (mount, unshare, setns, namespace flags of
clone), modules, reboot and swap, typing into a terminal (ioctl TIOCSTI, TIOCLINUX), and changing
a file's mode, owner, times or extended attributes (the chmod, chown, utime and setxattr families).
Sockets other than AF_UNIX get EAFNOSUPPORT; clone3 gets ENOSYS (so that its flags, which sit in
memory a filter cannot read, are never used: the C library falls back to clone). A system call
of another architecture kills the process. Runs beside student code: the standard library only.
"""

from __future__ import annotations

import ctypes
import errno
import platform
import struct

_AUDIT_ARCH_X86_64 = 0xC000003E
_SYSCALLS_X86_64 = {
    "execve": 59,
    "execveat": 322,
    "ptrace": 101,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "pidfd_getfd": 438,
    "kcmp": 312,
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "shmget": 29,
    "shmat": 30,
    "shmctl": 31,
    "semget": 64,
    "semop": 65,
    "semctl": 66,
    "semtimedop": 220,
    "msgget": 68,
    "msgsnd": 69,
    "msgrcv": 70,
    "msgctl": 71,
    "mq_open": 240,
    "mq_unlink": 241,
    "mq_timedsend": 242,
    "mq_timedreceive": 243,
    "mq_notify": 244,
    "mq_getsetattr": 245,
    "keyctl": 250,
    "add_key": 248,
    "request_key": 249,
    "bpf": 321,
    "perf_event_open": 298,
    "userfaultfd": 323,
    "name_to_handle_at": 303,
    "open_by_handle_at": 304,
    "mount": 165,
    "umount2": 166,
    "pivot_root": 155,
    "chroot": 161,
    "unshare": 272,
    "setns": 308,
    "open_tree": 428,
    "move_mount": 429,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "mount_setattr": 442,
    "kexec_load": 246,
    "kexec_file_load": 320,
    "init_module": 175,
    "finit_module": 313,
    "delete_module": 176,
    "reboot": 169,
    "swapon": 167,
    "swapoff": 168,
    "acct": 163,
    "iopl": 172,
    "ioperm": 173,
    "fanotify_init": 300,
    "process_madvise": 440,
    "quotactl": 179,
    "vhangup": 153,
    # a file's metadata, which Landlock does not govern (the host is read-only too: confine.py)
    "chmod": 90,
    "fchmod": 91,
    "fchmodat": 268,
    "fchmodat2": 452,
    "chown": 92,
    "fchown": 93,
    "lchown": 94,
    "fchownat": 260,
    "utime": 132,
    "utimes": 235,
    "utimensat": 280,
    "futimesat": 261,
    "setxattr": 188,
    "lsetxattr": 189,
    "fsetxattr": 190,
    "removexattr": 197,
    "lremovexattr": 198,
    "fremovexattr": 199,
    "setxattrat": 463,
    "removexattrat": 466,
}
_SOCKET, _SOCKETPAIR, _IOCTL, _CLONE, _CLONE3 = 41, 53, 16, 56, 435
_AF_UNIX = 1
_TIOCSTI, _TIOCLINUX = 0x5412, 0x541C
_NAMESPACE_FLAGS = 0x00020000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000 | 0x02000000 | 0x00000080

_ALLOW, _KILL = 0x7FFF0000, 0x80000000
_ERRNO = 0x00050000
_LD_W_ABS, _JEQ_K, _JSET_K, _JGE_K, _RET_K, _ALU_AND_K = 0x20, 0x15, 0x45, 0x35, 0x06, 0x54
_NR, _ARCH, _ARG0, _ARG1 = 0, 4, 16, 24
_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2


def supported() -> bool:
    """Whether this module knows the system calls of this machine's architecture (x86-64 only, for now)."""
    return platform.machine() in ("x86_64", "AMD64")


def _op(code: int, jt: int = 0, jf: int = 0, k: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def _deny(error: int) -> bytes:
    return _op(_RET_K, k=_ERRNO | error)


def program() -> list[bytes]:
    """The filter, one 8-byte instruction each."""
    allow = _op(_RET_K, k=_ALLOW)
    prog = [_op(_LD_W_ABS, k=_ARCH), _op(_JEQ_K, 1, 0, _AUDIT_ARCH_X86_64), _op(_RET_K, k=_KILL)]
    prog += [_op(_LD_W_ABS, k=_NR), _op(_JGE_K, 0, 1, 0x40000000), _deny(errno.EPERM)]  # the x32 ABI
    for number in sorted(set(_SYSCALLS_X86_64.values())):
        prog += [_op(_JEQ_K, 0, 1, number), _deny(errno.EPERM)]
    prog += [_op(_JEQ_K, 0, 1, _CLONE3), _deny(errno.ENOSYS)]
    for call in (_SOCKET, _SOCKETPAIR):  # a domain other than AF_UNIX
        prog += [
            _op(_JEQ_K, 0, 4, call),
            _op(_LD_W_ABS, k=_ARG0),
            _op(_JEQ_K, 1, 0, _AF_UNIX),
            _deny(errno.EAFNOSUPPORT),
            allow,
        ]
    prog += [
        _op(_JEQ_K, 0, 4, _IOCTL),
        _op(_LD_W_ABS, k=_ARG1),
        _op(_JEQ_K, 1, 0, _TIOCSTI),
        _op(_JEQ_K, 0, 1, _TIOCLINUX),
        _deny(errno.EPERM),
    ]
    prog += [
        _op(_LD_W_ABS, k=_NR),
        _op(_JEQ_K, 0, 3, _CLONE),
        _op(_LD_W_ABS, k=_ARG0),
        _op(_JSET_K, 0, 1, _NAMESPACE_FLAGS),
        _deny(errno.EPERM),
    ]
    return prog + [allow]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install() -> None:
    """Load the filter into this thread (and every process it forks from now on); it cannot be removed."""
    if not supported():
        raise OSError(f"no system call table for {platform.machine()}")
    code = b"".join(program())
    buffer = ctypes.create_string_buffer(code, len(code))
    fprog = _SockFprog(len(code) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP) failed")
