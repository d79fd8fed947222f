"""The seccomp policy, built in the grader: one list of system call names, compiled for this machine.

Refused with EPERM: running programs (execve, execveat), tracing and reading other processes
(ptrace, process_vm_readv/writev, pidfd_getfd, kcmp), io_uring (whose requests bypass a seccomp
filter), SysV IPC and POSIX message queues, keyrings, bpf, perf_event_open, userfaultfd, opening
files by handle, mounting and new namespaces (mount, unshare, setns, namespace flags of clone),
modules, reboot and swap, typing into a terminal (ioctl TIOCSTI, TIOCLINUX), and changing a file's
mode, owner, times or extended attributes (the chmod, chown, utime and setxattr families). Sockets
other than AF_UNIX get EAFNOSUPPORT; clone3 gets ENOSYS (so that its flags, which sit in memory a
filter cannot read, are never used: the C library falls back to clone). A system call of another
architecture kills the process; one of another ABI of this architecture (x32 on x86-64) gets EPERM.

``build`` compiles the policy with libseccomp (found through ctypes: isolate and nsjail use it too),
which knows every architecture's system call numbers; where libseccomp is missing, the hand-assembled
x86-64 program below is the fallback (other architectures then get no filter, and the sandbox's report
says so). Either way the result is classic BPF, as bytes: the worker (seccomp.py, beside the student)
installs them and builds nothing. ``SDPA_SECCOMP=hand-made`` in the environment forces the fallback
(the tests run a confinement test under each).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import platform
import struct
from dataclasses import dataclass

FORCE = "SDPA_SECCOMP"  # =hand-made: the fallback even where libseccomp is found

DENIED = (  # EPERM, whatever the arguments
    *("execve", "execveat", "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp"),
    *("io_uring_setup", "io_uring_enter", "io_uring_register"),
    *("shmget", "shmat", "shmctl", "semget", "semop", "semctl", "semtimedop", "msgget", "msgsnd", "msgrcv", "msgctl"),
    *("mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr"),
    *("keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd"),
    *("name_to_handle_at", "open_by_handle_at"),
    *("mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "open_tree", "move_mount"),
    *("fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr"),
    *("kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module"),
    *("reboot", "swapon", "swapoff", "acct", "iopl", "ioperm", "fanotify_init", "process_madvise", "quotactl"),
    "vhangup",
    # a file's metadata, which Landlock does not govern (the host is read-only too: confine.py)
    *("chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown", "lchown", "fchownat"),
    *("utime", "utimes", "utimensat", "futimesat"),
    *(
        "setxattr",
        "lsetxattr",
        "fsetxattr",
        "removexattr",
        "lremovexattr",
        "fremovexattr",
        "setxattrat",
        "removexattrat",
    ),
)
NO_SUCH_CALL = ("clone3",)  # ENOSYS
UNIX_SOCKETS_ONLY = ("socket", "socketpair")  # a domain (argument 0) other than AF_UNIX: EAFNOSUPPORT
TERMINAL_INPUT = (0x5412, 0x541C)  # ioctl requests (argument 1) TIOCSTI, TIOCLINUX: EPERM
# clone's flags (argument 0; 1 on s390): CLONE_NEWNS, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET, NEWCGROUP, NEWTIME
NAMESPACE_FLAGS = (0x00020000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000, 0x02000000, 0x00000080)
_AF_UNIX = 1

# Since Linux 5.1 (number 424) a new system call has the same number on every architecture (alpha and the MIPS
# ABIs add a base): the numbers of the list's calls from there on, for a libseccomp older than the call
UNIFIED = {
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "open_tree": 428,
    "move_mount": 429,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "clone3": 435,
    "pidfd_getfd": 438,
    "process_madvise": 440,
    "mount_setattr": 442,
    "fchmodat2": 452,
    "setxattrat": 463,
    "removexattrat": 466,
}

_ALLOW, _KILL_PROCESS, _ERRNO = 0x7FFF0000, 0x80000000, 0x00050000
_AUDIT_ARCH_X86_64, _AUDIT_ARCH_X32_TOKEN = 0xC000003E, 0x4000003E  # libseccomp names x32 apart
_MAX_INSTRUCTIONS = 4096  # BPF_MAXINSNS


@dataclass(frozen=True)
class Filter:
    """What the worker installs: classic BPF programs (8 bytes an instruction), and how they were built, or why
    there are none (for the sandbox's report)."""

    programs: tuple[bytes, ...]
    built: str


def build() -> Filter:
    """The policy for this machine: libseccomp's where it is found (and not refused by ``SDPA_SECCOMP``), else the
    hand-made x86-64 program, else none."""
    forced = os.environ.get(FORCE, "")
    if forced not in ("", "hand-made"):
        raise ValueError(f"{FORCE}={forced}: expected hand-made, or nothing (libseccomp where it is found)")
    why = f"{FORCE}=hand-made"
    if not forced:
        try:
            return Filter(*with_libseccomp())
        except OSError as error:
            why = str(error)
    try:
        return Filter((hand_made(),), f"hand-made, x86-64; {why}")
    except OSError as error:
        return Filter((), f"{why}; {error}")


# ---- libseccomp, through ctypes (seccomp.h of libseccomp 2.5)


class _Compare(ctypes.Structure):  # struct scmp_arg_cmp
    _fields_ = [
        ("arg", ctypes.c_uint),
        ("op", ctypes.c_int),
        ("datum_a", ctypes.c_uint64),
        ("datum_b", ctypes.c_uint64),
    ]


class _Version(ctypes.Structure):  # struct scmp_version
    _fields_ = [("major", ctypes.c_uint), ("minor", ctypes.c_uint), ("micro", ctypes.c_uint)]


_CMP_MASKED_EQ = 7
_ATTR_ACT_BADARCH, _ATTR_API_TSKIP = 2, 5


def _library() -> ctypes.CDLL:
    name = ctypes.util.find_library("seccomp")
    if name is None:
        raise OSError("libseccomp not found")
    try:
        return _declared(ctypes.CDLL(name, use_errno=True))
    except AttributeError as error:  # a libseccomp older than 2.3 (no seccomp_arch_native, seccomp_version...)
        raise OSError(f"{name} lacks a function: {error}") from None


def _declared(lib: ctypes.CDLL) -> ctypes.CDLL:
    lib.seccomp_version.restype = ctypes.POINTER(_Version)
    lib.seccomp_init.restype, lib.seccomp_init.argtypes = ctypes.c_void_p, [ctypes.c_uint32]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    lib.seccomp_attr_set.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32]
    lib.seccomp_arch_add.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
    lib.seccomp_arch_native.restype = ctypes.c_uint32
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.argtypes = [
        *(ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint, ctypes.POINTER(_Compare)),
    ]
    lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
    return lib


def _done(result: int, what: str) -> None:
    if result != 0:
        raise OSError(-result, f"libseccomp: {what}: {os.strerror(-result)}")


def _export(lib: ctypes.CDLL, ctx: int) -> bytes:
    fd = os.memfd_create("seccomp-bpf", os.MFD_CLOEXEC)
    try:
        _done(lib.seccomp_export_bpf(ctx, fd), "export")
        code = os.pread(fd, 8 * _MAX_INSTRUCTIONS + 1, 0)
    finally:
        os.close(fd)
    if not code or len(code) % 8 or len(code) > 8 * _MAX_INSTRUCTIONS:
        raise OSError(f"libseccomp exported {len(code)} bytes, not a program the kernel takes")
    return code


def _low_word_differs(arg: int, value: int) -> list[_Compare]:
    """``(argument & 0xFFFFFFFF) != value`` as libseccomp rules, one a bit: libseccomp compares all 64 bits and has
    no masked not-equal; the kernel reads these arguments as ints, as the hand-made filter does."""
    return [_Compare(arg, _CMP_MASKED_EQ, 1 << bit, 0 if value >> bit & 1 else 1 << bit) for bit in range(32)]


def with_libseccomp() -> tuple[tuple[bytes, ...], str]:
    """Two programs, the policy and a guard, and the library's version. libseccomp has one action for every call
    outside the native ABI, where the hand-made filter refuses x32's with EPERM and kills the rest: so the policy's
    is EPERM, and the guard, which allows every call of this architecture's ABIs, kills the rest (of two filters
    the kernel takes the stricter action)."""
    lib = _library()
    native = lib.seccomp_arch_native()
    version = lib.seccomp_version().contents

    def number(name: str) -> int:
        found = lib.seccomp_syscall_resolve_name(name.encode())
        if found == -1 and name in UNIFIED and native & 0xFFFF not in (8, 0x9026):  # not MIPS nor alpha
            return UNIFIED[name]
        if found == -1:
            raise OSError(f"libseccomp {version.major}.{version.minor}.{version.micro} does not know {name}")
        return found  # a negative pseudo-number where this architecture lacks the call: libseccomp skips it

    ctx = lib.seccomp_init(_ALLOW)
    if not ctx:
        raise OSError("libseccomp: seccomp_init failed")
    try:
        _done(lib.seccomp_attr_set(ctx, _ATTR_ACT_BADARCH, _ERRNO | errno.EPERM), "bad-architecture action")
        _done(lib.seccomp_attr_set(ctx, _ATTR_API_TSKIP, 1), "rules for system call -1")

        def rule(error: int, name: str | int, compares: list[_Compare] | None = None) -> None:
            nr = name if isinstance(name, int) else number(name)
            array = (_Compare * len(compares))(*compares) if compares else None
            _done(lib.seccomp_rule_add_array(ctx, _ERRNO | error, nr, len(compares or ()), array), f"rule {name}")

        rule(errno.EPERM, -1)  # no system call (what a tracer's skip leaves): refused, as any number outside the table
        for name in DENIED:
            rule(errno.EPERM, name)
        for name in NO_SUCH_CALL:
            rule(errno.ENOSYS, name)
        for name in UNIX_SOCKETS_ONLY:
            for compare in _low_word_differs(0, _AF_UNIX):
                rule(errno.EAFNOSUPPORT, name, [compare])
        for request in TERMINAL_INPUT:
            rule(errno.EPERM, "ioctl", [_Compare(1, _CMP_MASKED_EQ, 0xFFFFFFFF, request)])
        flags_arg = 1 if native in (0x16, 0x80000016) else 0  # s390, s390x: clone(stack, flags, ...)
        for flag in NAMESPACE_FLAGS:
            rule(errno.EPERM, "clone", [_Compare(flags_arg, _CMP_MASKED_EQ, flag, flag)])
        policy = _export(lib, ctx)
    finally:
        lib.seccomp_release(ctx)
    ctx = lib.seccomp_init(_ALLOW)
    if not ctx:
        raise OSError("libseccomp: seccomp_init failed")
    try:
        _done(lib.seccomp_attr_set(ctx, _ATTR_ACT_BADARCH, _KILL_PROCESS), "bad-architecture action")
        if native == _AUDIT_ARCH_X86_64:
            _done(lib.seccomp_arch_add(ctx, _AUDIT_ARCH_X32_TOKEN), "the x32 ABI")
        guard = _export(lib, ctx)
    finally:
        lib.seccomp_release(ctx)
    return (policy, guard), f"libseccomp {version.major}.{version.minor}.{version.micro}"


# ---- the fallback: assembled by hand, with x86-64's numbers

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
    "socket": 41,
    "socketpair": 53,
    "ioctl": 16,
    "clone": 56,
    "clone3": 435,
}

_LD_W_ABS, _JEQ_K, _JSET_K, _JGE_K, _RET_K = 0x20, 0x15, 0x45, 0x35, 0x06
_NR, _ARCH, _ARG0, _ARG1 = 0, 4, 16, 24


def _op(code: int, jt: int = 0, jf: int = 0, k: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def _deny(error: int) -> bytes:
    return _op(_RET_K, k=_ERRNO | error)


def hand_made() -> bytes:
    """The policy as one program with x86-64's numbers (a KeyError where the table lacks a name of the list)."""
    if platform.machine() not in ("x86_64", "AMD64"):
        raise OSError(f"no system call table for {platform.machine()}")
    nr = _SYSCALLS_X86_64
    (tiocsti, tioclinux), namespace_flags = TERMINAL_INPUT, 0
    for flag in NAMESPACE_FLAGS:
        namespace_flags |= flag
    allow = _op(_RET_K, k=_ALLOW)
    prog = [_op(_LD_W_ABS, k=_ARCH), _op(_JEQ_K, 1, 0, _AUDIT_ARCH_X86_64), _op(_RET_K, k=_KILL_PROCESS)]
    prog += [_op(_LD_W_ABS, k=_NR), _op(_JGE_K, 0, 1, 0x40000000), _deny(errno.EPERM)]  # the x32 ABI
    for number in sorted({nr[name] for name in DENIED}):
        prog += [_op(_JEQ_K, 0, 1, number), _deny(errno.EPERM)]
    for name in NO_SUCH_CALL:
        prog += [_op(_JEQ_K, 0, 1, nr[name]), _deny(errno.ENOSYS)]
    for name in UNIX_SOCKETS_ONLY:  # a domain other than AF_UNIX
        prog += [
            _op(_JEQ_K, 0, 4, nr[name]),
            _op(_LD_W_ABS, k=_ARG0),
            _op(_JEQ_K, 1, 0, _AF_UNIX),
            _deny(errno.EAFNOSUPPORT),
            allow,
        ]
    prog += [
        _op(_JEQ_K, 0, 4, nr["ioctl"]),
        _op(_LD_W_ABS, k=_ARG1),
        _op(_JEQ_K, 1, 0, tiocsti),
        _op(_JEQ_K, 0, 1, tioclinux),
        _deny(errno.EPERM),
    ]
    prog += [
        _op(_LD_W_ABS, k=_NR),
        _op(_JEQ_K, 0, 3, nr["clone"]),
        _op(_LD_W_ABS, k=_ARG0),
        _op(_JSET_K, 0, 1, namespace_flags),
        _deny(errno.EPERM),
    ]
    return b"".join([*prog, allow])
