"""The worker's zygote, on the grader's side: a process that imports torch once and forks one child per request
(student_side/worker.py), started as ``python -I -S worker.py LIBDIR FD [USER]`` from a library folder of copies of
``student_side/`` and links to site-packages, or forked from this process (``Zygote(fork=True)``) and stripped of what
it held. Its control protocol: docs/architecture.md, "The zygote's control protocol"; ``client.Sandbox`` asks it
for the children a grading runs in.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Sequence
from pathlib import Path

from autograder.sandbox.processes import NOBODY, privilege_drop
from autograder.sandbox.readable import exposed, module_name, readable, writable
from autograder.sandbox.seccomp_policy import build as build_seccomp_filter

# seconds the zygote may take to import torch, and to fork a child: the grader's own work, never the student's time
START_TIMEOUT = 120.0
_OWN_PACKAGES = ("autograder", "reference", "sdpa_assignment", "__editable__", "_sdpa", "tests")
# what runs beside the student, as a folder: every module in it is copied into the worker's library folder (its
# __init__.py, which makes it a package on our side, is not)
STUDENT_SIDE = Path(__file__).with_name("student_side")


def _library_folder(root: Path) -> Path:
    """A folder of copies of every module of ``student_side/`` (the worker and what it imports beside the student,
    as top-level modules), plus links to site-packages without this project's packages."""
    lib = root / "lib"
    lib.mkdir()
    for module in STUDENT_SIDE.glob("*.py"):
        if module.name != "__init__.py":
            shutil.copy(module, lib / module.name)
    site = Path(sysconfig.get_paths()["purelib"])
    for entry in site.iterdir():  # an entry named as one of our modules is left out: the name is the worker's
        if (
            not entry.name.startswith(_OWN_PACKAGES)
            and not entry.name.endswith(".pth")
            and not (lib / entry.name).exists()
        ):
            (lib / entry.name).symlink_to(entry)
    return lib


class Zygote:
    """The worker's zygote process (see student_side/worker.py): imports torch once, then forks a child per request.

    A single grading starts its own; a batch starts one, and every grading in it asks
    ``client()`` for a connection of its own, so torch is imported once per batch.

    ``fork=True`` forks the zygote from this process instead of starting a new Python, so that torch is not
    imported twice (3 to 4 CPU-s a cold grading): only for a process that has loaded nothing of a grading yet (no
    settings, reference, seed or hidden check: ``cli.main``, first thing). The child drops what it holds of this
    process (``_forget_grader``) and runs worker.py's ``main`` as the started one does.
    """

    def __init__(self, *, unprivileged_after_import: bool = False, fork: bool = False) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="sdpa-worker-"))
        lib = self.lib = _library_folder(self.folder)
        worker = lib / "worker.py"  # run from the library folder, in the zygote's folder (its cwd and HOME)
        self.drops_privileges, self.privileges = privilege_drop()
        syscalls = build_seccomp_filter()  # here, in the grader: the worker only installs it (seccomp_policy.py)
        self.seccomp = {"programs": [program.hex() for program in syscalls.programs], "built": syscalls.built}
        become = []
        if unprivileged_after_import and os.geteuid() == 0:  # torch imported as root, then nobody (tests)
            self.drops_privileges, become = True, [str(NOBODY)]
            self.privileges = "the worker becomes nobody after importing torch"
        if self.drops_privileges:
            for path in (self.folder, lib, *lib.glob("*.py")):  # worker.py among them
                os.chmod(path, 0o755)
        user = {"user": NOBODY, "group": NOBODY, "extra_groups": []} if self.drops_privileges and not become else {}
        self._control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._ready = False
        self._paths: dict[tuple, dict[str, list[str]]] = {}
        if fork:  # torch is imported here already; as root, the child becomes nobody after forking
            nobody = become or ([str(NOBODY)] if self.drops_privileges else [])
            self.process = _fork_zygote(self.folder, worker, lib, theirs, nobody)
            theirs.close()
            return
        self.process = subprocess.Popen(
            [sys.executable, "-I", "-S", str(worker), str(lib), str(theirs.fileno()), *become],
            cwd=self.folder,
            env=_zygote_environment(self.folder),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            pass_fds=[theirs.fileno()],
            start_new_session=True,
            **user,
        )
        theirs.close()

    def paths(self, cuda: bool, imports: Sequence[str] | None = None) -> dict[str, list[str]]:
        """What its children may read and write (readable.py), and the modules of the library folder: ``hidden`` from
        them (those outside ``imports``, the modules a submission may import, and what they need; none where ``imports``
        is None), and ``packages``, the others, whose own imports are theirs; worked out once per zygote and list."""
        key = (cuda, None if imports is None else tuple(imports))
        if key not in self._paths:
            packages = None
            if imports is not None:
                packages = exposed(Path(sysconfig.get_paths()["purelib"]), imports)
            links = [
                entry.name
                for entry in self.lib.iterdir()
                if entry.is_symlink() and module_name(entry.name).isidentifier()
            ]
            shown = {module_name(name) for name in links if packages is None or name in packages}
            self._paths[key] = {
                "read": readable(self.lib, cuda=cuda, packages=packages),
                "write": writable(cuda=cuda),
                "hidden": sorted({module_name(name) for name in links} - shown),
                "packages": sorted(shown),
            }
        return self._paths[key]

    def wait_ready(self) -> None:
        """Wait until the zygote has imported torch (the grader gets ready meanwhile)."""
        if not self._ready:
            self._control.settimeout(START_TIMEOUT)
            if self._control.recv(1) != b"R":
                raise RuntimeError(f"the worker did not start: {self.process.stderr.read().decode()[-2000:]}")
            self._ready = True

    def client(self) -> socket.socket:
        """A new connection to the zygote, for one grading."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        socket.send_fds(self._control, [b"C"], [theirs.fileno()])
        theirs.close()
        return ours

    def __enter__(self) -> Zygote:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._control.close()
        for kill in (os.killpg, os.kill):  # its group; and itself, where a forked one had no group of its own yet
            try:
                kill(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.process.wait()
        self.process.stderr.close()
        shutil.rmtree(self.folder, ignore_errors=True)


# the environment a zygote runs with, started or forked
def _zygote_environment(folder: Path) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "HOME": str(folder), "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1"}


class _Forked:
    """A zygote forked from this process: the part of ``subprocess.Popen`` the grader uses (pid, poll, wait,
    stderr)."""

    def __init__(self, pid: int, stderr) -> None:
        self.pid, self.stderr, self.returncode = pid, stderr, None

    def _reap(self, flags: int) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, flags)
            except ChildProcessError:  # reaped already (an orphan sweep)
                pid, status = self.pid, 0
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def poll(self) -> int | None:
        return self._reap(os.WNOHANG)

    def wait(self) -> int:
        return self._reap(0)


def _fork_zygote(folder: Path, worker: Path, lib: Path, control: socket.socket, user: list[str]) -> _Forked:
    """Fork the zygote from this process (Zygote(fork=True)); the child never returns here."""
    first_gradient()
    errors, into = os.pipe()
    for stream in (sys.stdout, sys.stderr):  # nothing of ours is left in a buffer the child could write out
        stream.flush()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(errors)
            _become_zygote(folder, worker, lib, control.fileno(), into, user)
        finally:
            os._exit(1)  # main returned (the grader has gone) or failed: its stderr says why
    os.close(into)
    return _Forked(pid, os.fdopen(errors, "rb"))


def first_gradient() -> None:
    """Load, before forking, what torch loads for its first gradient given one (sympy, through torch.fx's symbolic
    shapes; about 0.9 CPU-s): the zygote's warm-up and this process's first check then both find it loaded, paid once.
    A library's modules only: nothing of the grading is loaded yet."""
    import torch

    x = torch.ones(2, requires_grad=True)
    torch.autograd.grad(x * 2, x, torch.ones_like(x))


def _become_zygote(folder: Path, worker: Path, lib: Path, control: int, errors: int, user: list[str]) -> None:
    """In the forked child: a session of its own, only the control socket and a stderr of its own open, nothing of the
    grader's (``_forget_grader``), then worker.py's ``main``, as ``python -I -S worker.py LIB FD [USER]`` runs it."""
    import runpy

    os.setsid()
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd, to in ((devnull, 0), (devnull, 1), (errors, 2)):
        os.dup2(fd, to)
    os.closerange(3, control)
    os.closerange(control + 1, os.sysconf("SC_OPEN_MAX"))
    os.chdir(folder)
    argv = [str(worker), str(lib), str(control), *user]
    _forget_grader(folder, [sys.executable, "-I", "-S", *argv])
    sys.argv = argv
    runpy.run_path(str(worker), run_name="__main__")


def _forget_grader(folder: Path, command: list[str]) -> None:
    """Drop what a forked zygote holds of the grading process: its environment and arguments (the kernel's copy,
    which ``/proc/self/cmdline`` and ``environ`` read, is overwritten with the zygote's command line and zeros), its
    modules (this package's, the editable install's finder), its import paths and finders beyond Python's own."""
    import ctypes

    os.environ.clear()
    os.environ.update(_zygote_environment(folder))
    sys.orig_argv[:] = command
    stat = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
    arg_start, arg_end, env_start, env_end = (int(field) for field in stat[45:49])
    text = ("\0".join(command) + "\0").encode()[: arg_end - arg_start]
    ctypes.memset(arg_start, 0, arg_end - arg_start)
    ctypes.memmove(arg_start, text, len(text) - 1)  # the last byte stays 0: the kernel reads up to it
    ctypes.memset(env_start, 0, env_end - env_start)
    site = {sysconfig.get_paths()[key] for key in ("purelib", "platlib")}
    sys.path[:] = [entry for entry in sys.path if entry and entry not in site and Path(entry).is_absolute()]
    sys.meta_path[:] = [finder for finder in sys.meta_path if _module_of(finder).startswith("_frozen_importlib")]
    sys.path_importer_cache.clear()
    for name in [name for name in sys.modules if name.startswith((*_OWN_PACKAGES, "_distutils_hack"))]:
        del sys.modules[name]


def _module_of(finder) -> str:
    return getattr(finder, "__module__", None) or type(finder).__module__
