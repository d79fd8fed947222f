"""The worker's zygote: the process the grader starts, which imports torch once and forks a child per submission.

Started by the grader as ``python -I -S worker.py LIBDIR FD [USER]`` with a minimal environment (or forked from the
grading process and stripped of it: zygote.Zygote(fork=True)); LIBDIR holds links to torch and its dependencies and
copies of this folder's modules (student_side/), nothing else. It imports torch once, then, for every request on its
control socket, forks a child that serves one submission (serving.py: it confines itself, confine.py, loads the
submission and answers calls on a socket of its own). The control protocol is in ``main``'s docstring and
docs/architecture.md. Children never see the grader's packages, the reference, the config or the results file: only
plain tensors and plain data cross the sockets (see wire.py). The standard library and torch only.
"""

from __future__ import annotations

import os
import signal
import socket
import sys


def _warm_up() -> None:
    """Pay once, here, what the first recorded call would pay in every child (about a second)."""
    import recording
    import torch

    x = torch.ones(2, 3, requires_grad=True)
    seen, functions, ops = recording._recorder()
    with functions, ops:
        y = torch.softmax(x @ x.transpose(-2, -1), dim=-1).masked_fill(torch.eye(2, dtype=torch.bool), 0.0)
        torch.autograd.grad(y, x, torch.ones_like(y))  # with a gradient given, as _call gives one (it loads sympy)
    try:  # compiles RemoteModule's template as it is imported, which torch._dynamo's first import (torch.func,
        # torch.utils.checkpoint, an optimizer's zero_grad) does: here, before any code guard, as torch's own import
        import torch.distributed.nn  # noqa: F401
    except Exception:  # noqa: BLE001 - a torch built without distributed: nothing of it to import later either
        pass


def main() -> None:
    """The zygote: import torch once, then fork a child for every spawn request.

    Requests come on the control socket (from the grader that started us; b"R" goes back on it once torch is
    imported) or on client sockets the control socket hands over (one per grading in a batch). Each is one
    SOCK_SEQPACKET message: b"C" with a client socket, or b"S" + JSON (the child's spec: scratch, limits, read,
    write, cgroups, seccomp, block_fused, imports, hidden, packages) with the socket the new child serves calls on;
    the child's pid goes back to the asker, 8 bytes. A socket that closes takes its children with it; the control
    socket, all of them and the zygote (docs/architecture.md, "The zygote's control protocol").
    """
    libdir, control_fd = sys.argv[1:3]
    grader = os.getppid()
    sys.path[:0] = [libdir]
    import confine  # the sandbox's own modules, imported before any privilege is dropped

    confine.die_with_parent(grader)  # from the start: the grader may die while torch is being imported
    import json
    import select

    import torch
    import torch.nn.functional  # noqa: F401 - imported once here so every child starts warm
    import torch.overrides  # noqa: F401
    import torch.utils._python_dispatch  # noqa: F401

    torch.set_num_threads(1)
    _warm_up()
    import blocking
    import serving  # and what it serves with (wire.py), imported once here so every child has them

    blocking._find_fused_kernels()
    blocking._find_python_attention()

    if len(sys.argv) > 3:  # become this user once torch is imported (how the tests grade as an unprivileged user)
        user = int(sys.argv[3])
        os.setgroups([])
        os.setresgid(user, user, user)
        os.setresuid(user, user, user)
    confine.die_with_parent(grader)  # again: a change of user clears it. The grader killed (SIGKILL too): the
    # zygote dies, and with it every keeper
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    control = socket.socket(fileno=int(control_fd))
    control.send(b"R")
    clients: list[socket.socket] = []
    keepers: dict[socket.socket, list[int]] = {control: []}  # each asker's children, as pidfds (no PID reuse)
    while True:
        ready, _, _ = select.select([control, *clients], [], [])
        for conn in ready:
            try:
                message, fds, _, _ = socket.recv_fds(conn, 1 << 16, 1)
            except OSError:
                message, fds = b"", []
            if not message:  # the asker has gone (its grading ended or crashed): so do the children it asked for
                _kill_all(keepers.pop(conn, []))
                if conn is control:
                    for rest in keepers.values():
                        _kill_all(rest)
                    return  # the grader has gone: so do we
                clients.remove(conn)
                conn.close()
            elif message[:1] == b"C" and fds:
                client = socket.socket(fileno=fds[0])
                clients.append(client)
                keepers[client] = []
            elif message[:1] == b"S" and fds:
                spec = json.loads(message[1:])
                zygote = os.getpid()
                pid = os.fork()
                if pid == 0:
                    confine.die_with_parent(zygote)  # the zygote killed: this keeper, and its sandbox, die too
                    for other in (control, *clients, *(fd for rest in keepers.values() for fd in rest)):
                        _close(other)  # a child can reach no grader but its own
                    serving._serve(socket.socket(fileno=fds[0]), spec)
                    os._exit(0)
                os.close(fds[0])
                _track(keepers[conn], pid)
                conn.send(pid.to_bytes(8, "big"))


def _track(pidfds: list[int], pid: int) -> None:
    """Keep a pidfd of the child ``pid`` (it names that process even after its PID is reused); forget dead ones."""
    import select

    for fd in [fd for fd in pidfds if select.select([fd], [], [], 0)[0]]:  # readable: that child has exited
        pidfds.remove(fd)
        os.close(fd)
    try:
        pidfds.append(os.pidfd_open(pid))
    except OSError:  # exited already, or a kernel before 5.3: the grader's cgroup and PDEATHSIG remain
        pass


def _kill_all(pidfds: list[int]) -> None:
    """SIGKILL each child (a keeper: its sandbox's PID 1 and everything in that namespace die with it)."""
    for fd in pidfds:
        try:
            signal.pidfd_send_signal(fd, signal.SIGKILL)
        except OSError:
            pass
        os.close(fd)


def _close(thing) -> None:
    if isinstance(thing, int):
        os.close(thing)
    else:
        thing.close()


if __name__ == "__main__":
    main()
