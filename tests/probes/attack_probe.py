# A hostile submission's toolbox: each attack_* function returns True when the attack got through.
# tests/sandbox/test_confinement.py calls them in the worker sandbox, as root and as an unprivileged user.
import ctypes
import os
import signal
import socket
import subprocess
import time

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def _opened(path):
    try:
        with open(path, "rb") as handle:
            return len(handle.read(100)) > 0
    except OSError:
        return False


def attack_read(path):
    """Read any file by absolute path (the reference, a check, another student's submission)."""
    return _opened(path)


def attack_environ(pid):
    """Read the grader's environment (secrets, tokens) through /proc."""
    return _opened(f"/proc/{pid}/environ")


def attack_proc_root(pid):
    """Follow an outside process's /proc magic links to its root and working folder."""
    return any(os.path.exists(f"/proc/{pid}/{link}/.") for link in ("root", "cwd")) and _listed(f"/proc/{pid}/cwd")


def _listed(path):
    try:
        return len(os.listdir(path)) > 0
    except OSError:
        return False


def attack_signal(pid):
    """Signal a process outside the sandbox (signal 0 only asks whether it may)."""
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


def attack_kill(pid):
    """SIGKILL a process outside the sandbox (the shared zygote, the grader)."""
    try:
        os.kill(pid, signal.SIGKILL)
        return True
    except OSError:
        return False


def attack_ptrace(pid):
    """Attach to a process outside with ptrace."""
    attached = libc.ptrace(16, pid, None, None) == 0  # PTRACE_ATTACH
    if attached:
        libc.ptrace(17, pid, None, None)  # PTRACE_DETACH
    return attached


def attack_process_vm_readv(pid):
    """Read another process's memory without ptrace."""
    buffer = ctypes.create_string_buffer(8)
    local = (ctypes.c_void_p * 2)(ctypes.cast(buffer, ctypes.c_void_p), 8)
    remote = (ctypes.c_void_p * 2)(0x400000, 8)
    libc.syscall(310, pid, local, 1, remote, 1, 0)
    return ctypes.get_errno() not in (1, 3, 38)  # EPERM, ESRCH, ENOSYS: blocked; EFAULT: it reached the process


def attack_write_tmp(path):
    """Leave a file in the machine's /tmp (or /dev/shm), outside the scratch folder."""
    try:
        with open(path, "w") as handle:
            handle.write("left behind")
        return True
    except OSError:
        return False


def attack_plant_module(path):
    """Write a module where the worker or the grader will import it."""
    return attack_write_tmp(path)


def attack_tcp(port):
    """Connect to a TCP port on this machine."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as client:
            client.settimeout(2)
            client.connect(("127.0.0.1", port))
            return True
    except OSError:
        return False


def attack_udp():
    """Open a UDP socket."""
    try:
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM).close()
        return True
    except OSError:
        return False


def attack_netlink():
    """Open a netlink socket."""
    try:
        socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0).close()
        return True
    except OSError:
        return False


def attack_abstract_socket(name):
    """Reach a unix socket in the abstract namespace (another student's worker could listen on one)."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.connect("\0" + name)
            return True
    except OSError:
        return False


def attack_exec():
    """Run another program (a shell)."""
    try:
        return subprocess.run(["/bin/sh", "-c", "exit 7"], timeout=5).returncode == 7
    except (OSError, subprocess.SubprocessError):
        return False


def attack_memfd_exec(program):
    """Run a program (its bytes, a uint8 tensor, dropped in a memfd) from the memfd."""
    fd = os.memfd_create("x")
    os.write(fd, bytes(program.tolist()))
    pid = os.fork()
    if pid == 0:
        try:
            os.execv(f"/proc/self/fd/{fd}", ["true"])
        finally:
            os._exit(9)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0


def attack_sysv_shm():
    """Make a System V shared memory segment (readable by another student's worker)."""
    segment = libc.shmget(0x5D9A, 4096, 0o1666)  # IPC_CREAT
    return segment >= 0


def attack_posix_mq():
    """Open a POSIX message queue."""
    return libc.syscall(240, b"/sdpa", 0o100 | 2, 0o666, None) >= 0  # mq_open(O_CREAT | O_RDWR)


def attack_keyring():
    """Add a key to a keyring (shared between processes of one user)."""
    return libc.syscall(248, b"user", b"sdpa", b"answer", 6, -3) >= 0  # add_key(..., KEY_SPEC_SESSION_KEYRING)


def attack_io_uring():
    """Set up an io_uring, whose requests a seccomp filter does not see."""
    params = ctypes.create_string_buffer(120)
    return libc.syscall(425, 4, params) >= 0


def attack_bpf():
    """Use bpf()."""
    attr = ctypes.create_string_buffer(128)
    return libc.syscall(321, 0, attr, 128) >= 0 or ctypes.get_errno() not in (1, 38)


def attack_unshare():
    """Make new namespaces of its own (a way around the rules)."""
    return libc.unshare(0x10000000) == 0


def attack_tiocsti():
    """Type into the controlling terminal."""
    try:
        fd = os.open("/dev/tty", os.O_RDWR)
    except OSError:
        return False
    try:
        return libc.ioctl(fd, 0x5412, ctypes.c_char_p(b"x")) == 0
    finally:
        os.close(fd)


def attack_leftover(marker):
    """Leave a process running after grading (a daemon in its own session)."""
    pid = os.fork()
    if pid == 0:
        os.setsid()
        if os.fork() == 0:
            libc.prctl(15, marker.encode()[:15], 0, 0, 0)  # PR_SET_NAME
            while True:
                time.sleep(1)
        os._exit(0)
    os.waitpid(pid, 0)
    return True


def attack_fork_bomb(count):
    """Start ``count`` processes at once."""
    started = []
    try:
        for _ in range(count):
            pid = os.fork()
            if pid == 0:
                time.sleep(30)
                os._exit(0)
            started.append(pid)
    except OSError:
        pass
    for pid in started:
        os.kill(pid, signal.SIGKILL)
    return len(started) >= count


def attack_memory_in_helpers(megabytes):
    """Hold memory in forked helpers, each under its own address-space cap, beyond the cap of the whole: True only if
    every helper got its block and all are still alive together."""
    read, write = os.pipe()
    helpers = []
    for _ in range(3):
        pid = os.fork()
        if pid == 0:
            try:
                block = bytearray(megabytes << 20)
                block[::4096] = b"x" * len(block[::4096])
                os.write(write, b"1")
            except MemoryError:
                os.write(write, b"0")
            os.close(write)
            time.sleep(30)
            os._exit(0)
        helpers.append(pid)
    os.close(write)
    got = b"".join(os.read(read, 1) for _ in helpers)
    # all three held their blocks together only if none has died since: the kernel's OOM killer may take a helper
    # that had already written "1" (the largest) to let the next one allocate
    alive = [pid for pid in helpers if os.waitpid(pid, os.WNOHANG) == (0, 0)]  # a dead one is reaped here
    for pid in alive:
        os.kill(pid, signal.SIGKILL)
    return got == b"111" and alive == helpers


def attack_clone_parent(marker):
    """A helper made with clone(CLONE_PARENT): a sibling, not a child, so a sweep by parentage misses it."""
    pid = os.fork()
    if pid == 0:
        helper = libc.syscall(56, 0x00008000 | 17, 0, 0, 0, 0)  # clone(CLONE_PARENT | SIGCHLD): like fork
        if helper == 0:
            libc.prctl(15, marker.encode()[:15], 0, 0, 0)  # PR_SET_NAME
            while True:
                libc.sleep(1)
        os._exit(0 if helper > 0 else 1)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0


def _append(path):
    with open(path, "ab") as handle:
        handle.write(b"x")


def attack_metadata(path):
    """Change a host file's mode (setuid), owner, times, extended attributes, content, name or existence."""
    changed = []
    steps = {
        "chmod": lambda: os.chmod(path, 0o4777),
        "chown": lambda: os.chown(path, os.getuid(), 0),
        "utime": lambda: os.utime(path, (0, 0)),
        "setxattr": lambda: os.setxattr(path, "user.sdpa", b"1"),
        "removexattr": lambda: os.removexattr(path, "user.canary"),
        "write": lambda: _append(path),
        "link": lambda: os.link(path, path + ".linked"),
        "rename": lambda: os.rename(path, path + ".moved"),
        "unlink": lambda: os.unlink(path),
    }
    for name, step in steps.items():
        try:
            step()
            changed.append(name)
        except OSError:
            pass
    fd = None
    try:  # by descriptor too: a file opened for reading, then fchmod and fchown
        fd = os.open(path, os.O_RDONLY)
        os.fchmod(fd, 0o4777)
        changed.append("fchmod")
    except OSError:
        pass
    finally:
        if fd is not None:
            os.close(fd)
    return changed or False
