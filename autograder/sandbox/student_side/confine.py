"""Confine a forked worker child before the submission loads: namespaces, Landlock, seccomp, limits.

``enter`` runs in a child the zygote just forked (single-threaded, no student code yet):

1. ``unshare`` new user, PID, network, IPC, mount and UTS namespaces (the user namespace is
   what lets an unprivileged grader do it; as root it also takes away every capability over
   the machine), then ``fork``: the student's process is PID 1 of its own PID namespace, so
   everything it starts dies with it, by the kernel's rule. The parent stays behind as a
   keeper, outside that namespace, whose death (a SIGKILL from the grader) kills PID 1.
2. In the new mount namespace: every host file system read-only (``mount_setattr`` of / and
   all below it, as bubblewrap and nsjail do: no mode, owner, time, xattr, name or content of a
   host file can change, whatever user the worker is), then a private size-bounded tmpfs on
   /tmp, /dev/shm and /run, a fresh /proc that shows only the sandbox, and a scratch folder in
   that tmpfs holding a copy of the submission; the grader's own scratch folder is never written.
3. Landlock: read Python, torch and the libraries they load; read-write the scratch folder and /dev/shm;
   nothing else; no TCP; no signal or abstract socket outside (see landlock.py).
4. seccomp: no exec, ptrace, io_uring, SysV IPC, keyrings, non-unix sockets... (the filter the grader
   built, seccomp_policy.py, installed by seccomp.py).
5. All capabilities dropped; resource limits set (they cannot be raised again).

Before step 1 the child joins the submission's cgroups (made by the grader, cgroups.py). A
mechanism the machine lacks is skipped and named in the report the worker sends before the
submission loads (report.py reads it); a sandbox built halfway is reported as broken and runs
nothing. Runs beside student code: the standard library only.
"""

from __future__ import annotations

import ctypes
import errno
import os
import re
import resource
import shutil
import signal
import socket
import stat
import struct

import landlock
import seccomp

_CLONE_NEWNS, _CLONE_NEWUTS, _CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
_CLONE_NEWUSER, _CLONE_NEWPID, _CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_REMOUNT = 1, 2, 4, 8, 32
_MS_BIND, _MS_REC, _MS_PRIVATE = 4096, 16384, 1 << 18
_PR_SET_PDEATHSIG, _PR_SET_DUMPABLE, _PR_CAPBSET_DROP = 1, 4, 24
_SYS_MOUNT_SETATTR, _AT_FDCWD, _AT_RECURSIVE, _MOUNT_ATTR_RDONLY = 442, -100, 0x8000, 1

SCRATCH = "/tmp/scratch"  # inside the sandbox's own /tmp

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")


def die_with_parent(parent: int) -> None:
    """The kernel SIGKILLs this process when ``parent`` (the process that forked or started it) dies, however it
    dies, SIGKILL included; if it is gone already, exit now. Set after any change of user (which clears it)."""
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def _mount(source: str, target: str, kind: str | None, flags: int, data: str | None = None) -> None:
    encoded = [None if s is None else s.encode() for s in (source, target, kind, data)]
    _check(_libc.mount(encoded[0], encoded[1], encoded[2], ctypes.c_ulong(flags), encoded[3]), f"mount {target}")


def _write(path: str, text: str) -> None:
    with open(path, "w") as handle:
        handle.write(text)


def _unshare() -> None:
    """New namespaces (the caller then maps its ids, _map_ids)."""
    flags = _CLONE_NEWUSER | _CLONE_NEWPID | _CLONE_NEWNET | _CLONE_NEWIPC | _CLONE_NEWNS | _CLONE_NEWUTS
    _libc.prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)  # a process that changed its user may not write its own maps otherwise
    _check(_libc.unshare(flags), "unshare")


def _map_ids(uid: int, gid: int) -> None:
    """Inside the new user namespace, the same user and group as outside."""
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")


def _read_only_host() -> None:
    """Every mount of this namespace read-only, recursively (only mounts made after this are writable).

    The kernel lets a user namespace add the read-only flag to the mounts it inherited (never clear
    it). Where ``mount_setattr`` is missing (kernels before 5.12, which have no Landlock either: a
    weaker sandbox, said so), each mount it can reach is remounted alone, keeping its locked flags."""
    _libc.syscall.restype = ctypes.c_long
    attr = struct.pack("=QQQQ", _MOUNT_ATTR_RDONLY, 0, 0, 0)
    if _libc.syscall(_SYS_MOUNT_SETATTR, _AT_FDCWD, b"/", _AT_RECURSIVE, attr, len(attr)) == 0:
        return
    if ctypes.get_errno() != errno.ENOSYS:
        _check(-1, "mount_setattr /")
    with open("/proc/self/mountinfo") as handle:
        targets = [re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), line.split()[4]) for line in handle]
    for target in targets:
        try:
            kept = os.statvfs(target).f_flag  # ST_NOSUID, ST_NODEV, ST_NOEXEC, ST_NOATIME, ST_NODIRATIME as MS_*
            flags = (kept & (_MS_NOSUID | _MS_NODEV | _MS_NOEXEC | 1024 | 2048)) | (1 << 21 if kept & 4096 else 0)
            _mount("none", target, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | flags)
        except OSError:
            continue  # hidden under another mount, or out of this user's reach


def _mounts(scratch: str, keep: list[str], tmp_bytes: int, tmp_inodes: int) -> str:
    """The host read-only; a private tmpfs on /tmp and /dev/shm (``keep`` bound back in, read-only), and a
    fresh scratch folder."""
    _mount("none", "/", None, _MS_REC | _MS_PRIVATE)
    _read_only_host()
    kept = [(path, os.open(path, os.O_PATH | os.O_CLOEXEC)) for path in keep if path.startswith("/tmp/")]
    submission = os.open(os.path.join(scratch, "attention.py"), os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    size = f"size={tmp_bytes},nr_inodes={tmp_inodes},mode=1777"
    _mount("tmpfs", "/tmp", "tmpfs", _MS_NOSUID | _MS_NODEV, size)
    if os.path.isdir("/dev/shm"):
        _mount("tmpfs", "/dev/shm", "tmpfs", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, size)
    if os.path.isdir("/run"):  # the machine's unix sockets (Landlock does not yet govern connecting to them)
        _mount("tmpfs", "/run", "tmpfs", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, "size=1m,mode=755")
    for path, fd in kept:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            os.makedirs(path, exist_ok=True)
        else:  # a single-file module (pytest_timeout.py, six.py): bound onto a file of its own
            os.makedirs(os.path.dirname(path), exist_ok=True)
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644))
        _mount(f"/proc/self/fd/{fd}", path, None, _MS_BIND | _MS_REC)
        _mount("none", path, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | _MS_NOSUID | _MS_NODEV)
        os.close(fd)
    os.mkdir(SCRATCH, 0o700)
    with os.fdopen(submission, "rb") as source, open(os.path.join(SCRATCH, "attention.py"), "wb") as copy:
        shutil.copyfileobj(source, copy)
    return SCRATCH


def _keep_until_child_exits(pid: int) -> None:
    """The keeper: wait for PID 1 of the sandbox; leave with its status."""
    while True:
        try:
            _, status = os.waitpid(pid, 0)
        except ChildProcessError:
            os._exit(0)
        except InterruptedError:
            continue
        os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


def _drop_capabilities() -> None:
    for cap in range(64):
        _libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)
    header = struct.pack("=Ii", 0x20080522, 0)
    _libc.capset(ctypes.c_char_p(header), ctypes.c_char_p(bytes(24)))


def _build(scratch: str, read: list[str], limits: dict, uid: int, gid: int) -> str:
    """In the new namespaces: fork PID 1 (the keeper stays outside), mount the private folders."""
    _map_ids(uid, gid)
    alive_read, alive_write = os.pipe()
    pid = os.fork()
    if pid:
        os.close(alive_read)  # the write end stays open as long as the keeper lives
        _keep_until_child_exits(pid)
    os.close(alive_write)
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    os.set_blocking(alive_read, False)
    try:
        if os.read(alive_read, 1) == b"":  # the keeper died before PDEATHSIG was set
            os._exit(1)
    except BlockingIOError:
        pass
    os.close(alive_read)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the zygote ignores its children; the student may wait for its own
    scratch = _mounts(scratch, read, limits["tmp_bytes"], limits["tmp_inodes"])
    _mount("proc", "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
    socket.sethostname("sandbox")
    return scratch


def _join(cgroups: list[str]) -> str:
    """Move this process (and so all it will start) into the submission's cgroups."""
    if not cgroups:
        return "missing (the grader could not make cgroups)"
    try:
        for procs in cgroups:
            _write(procs, str(os.getpid()))
    except OSError as error:
        return f"missing ({error})"
    return "memory and pids cgroups"


def enter(
    scratch: str, read: list[str], write: list[str], limits: dict, cgroups: list[str], syscalls: dict
) -> tuple[str, dict]:
    """Confine this process as the module says; return its scratch folder now, and what held, by mechanism.
    ``syscalls`` is the grader's seccomp filter: {"programs": [hex of classic BPF], "built": how, or why none}."""
    report: dict = {"cgroups": _join(cgroups)}
    uid, gid = os.geteuid(), os.getegid()
    try:
        _unshare()
    except OSError as error:  # this machine has no (unprivileged) namespaces: a weaker sandbox, said so
        report["namespaces"] = f"missing ({error})"
    else:
        try:
            scratch = _build(scratch, read, limits, uid, gid)
            read = [*read, "/proc"]  # a fresh /proc: it shows the sandbox's own processes only
            report["namespaces"] = (
                "PID, network, IPC, mount, UTS and user namespaces; host read-only; private /tmp, /dev/shm and /proc"
            )
        except OSError as error:  # half-built: the grader's failure, never run student code in it
            report["broken"] = f"the sandbox could not be built: {error}"
            return scratch, report
    os.chdir(scratch)
    try:
        version = landlock.restrict(read, [scratch, *write])
        report["landlock"] = f"Landlock ABI {version}"
    except OSError as error:
        report["landlock"] = f"missing ({error})"
    _limit(limits)
    _drop_capabilities()
    try:
        if not syscalls["programs"]:
            raise OSError(syscalls["built"])  # the grader has no filter for this machine: why
        seccomp.install([bytes.fromhex(program) for program in syscalls["programs"]])
        report["seccomp"] = f"seccomp filter ({syscalls['built']})"
    except OSError as error:
        report["seccomp"] = f"missing ({error})"
    return scratch, report


def _limit(limits: dict) -> None:
    """The per-process limits (the grader's settings, [limits] in autograder/defaults.toml, as plain values)."""
    memory = limits["memory_bytes"]
    # CUDA reserves far more address space than it uses: cap the data segment there instead
    cap = resource.RLIMIT_DATA if limits.get("cuda") else resource.RLIMIT_AS
    resource.setrlimit(cap, (memory, memory))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["output_bytes"], limits["output_bytes"]))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NPROC, (limits["processes"], limits["processes"]))
