"""The sandbox holds as root and as an unprivileged user: each attack of tests/probes/attack_probe.py fails.

Every attack runs in a worker beside an honest function (the reference's attention_scores, in the
same submission); the test asserts that the attack got nothing and that the honest function still
answers correctly afterwards, from the same zygote.
"""

from __future__ import annotations

import ctypes.util
import os
import socket
import sysconfig
import time
import uuid
from pathlib import Path

import pytest
import torch

from autograder.sandbox import seccomp_policy
from autograder.sandbox.cleanup import remove_tree
from autograder.sandbox.client import Sandbox
from autograder.sandbox.processes import NOBODY, readable_by_others
from autograder.sandbox.report import SandboxMissing, describe, held
from autograder.sandbox.zygote import Zygote
from tests.helpers import REFERENCE, ROOT, limits

PROBE = REFERENCE.read_text() + "\n" + (Path(__file__).parents[1] / "probes" / "attack_probe.py").read_text()
MODES = ["root", "unprivileged"]


@pytest.fixture(scope="module", params=MODES)
def zygote(request):
    """A warm zygote, as root (where the tests run as root) or as an unprivileged user."""
    if request.param == "root" and os.geteuid() != 0:
        pytest.skip("the tests do not run as root")
    site = Path(sysconfig.get_paths()["purelib"])
    if request.param == "unprivileged" and os.geteuid() == 0 and not readable_by_others(site):
        # the grader itself would refuse, rightly ("the sandbox could not be built: Permission denied")
        pytest.skip(f"an unprivileged user cannot reach {site}: a folder above it is closed to others")
    started = Zygote(unprivileged_after_import=request.param == "unprivileged")
    started.wait_ready()
    yield started
    started.close()


def _sandbox(tmp_path: Path, zygote: Zygote, memory_mb: int) -> Sandbox:
    path = tmp_path / "submission.py"
    path.write_text(PROBE)
    chosen = limits(memory_mb=memory_mb, output_kb=64, load_timeout=10, after_hang_timeout=2)
    # the kernel's layers alone: the worker's in-process guard (block_fused: the fused block and the code guard,
    # which refuses ctypes) would stop the probe's system calls before the kernel is asked
    return Sandbox(path, chosen, zygote=zygote, block_fused=False)


def attack(tmp_path: Path, zygote: Zygote, name: str, *args, timeout: float = 20, memory_mb: int = 1024):
    """Run attack_<name>(*args) in a fresh sandbox; check the honest function beside it; return what it got."""
    with _sandbox(tmp_path, zygote, memory_mb) as box:
        assert box.load().ok, box.load_reply
        assert held(box.confinement), box.confinement
        got = box.call(f"attack_{name}", args, timeout=timeout)
        q, k = torch.randn(2, 3, 4, dtype=torch.float64), torch.randn(2, 5, 4, dtype=torch.float64)
        honest = box.call("attention_scores", (q, k), timeout=10)
    assert honest.ok and torch.allclose(honest.value, q @ k.transpose(-2, -1)), honest
    return got.value if got.ok else got.describe()


def _editable_finder() -> Path:
    site = Path(sysconfig.get_paths()["purelib"])
    return next(site.glob("__editable__*finder.py"), site / "__editable__.missing_finder.py")


@pytest.mark.parametrize(
    "path",
    [REFERENCE, ROOT / "autograder" / "checks" / "check_3_sdpa.py", ROOT / "pyproject.toml", Path("/etc/passwd")],
    ids=["reference", "hidden-check", "project", "etc-passwd"],
)
def test_files_outside_python_and_torch_cannot_be_read(tmp_path, zygote, path):
    """The reference, the hidden checks, the project and the system's files are unreadable by absolute path."""
    assert attack(tmp_path, zygote, "read", str(path)) is False


def test_the_editable_install_finder_cannot_be_read(tmp_path, zygote):
    """The editable-install finder, which names the project's folder, is not readable either."""
    finder = _editable_finder()
    if not finder.exists():
        pytest.skip("the grader is not an editable install here")
    assert attack(tmp_path, zygote, "read", str(finder)) is False


def test_another_students_files_cannot_be_read(tmp_path, zygote):
    """A file of another student (here, beside the project, outside /tmp) cannot be read."""
    other = ROOT / f".other-student-{uuid.uuid4().hex}.py"
    other.write_text("SOLUTION = 1\n")
    try:
        assert attack(tmp_path, zygote, "read", str(other)) is False
    finally:
        other.unlink()


def test_the_graders_environment_and_proc_links_are_out_of_reach(tmp_path, zygote):
    """/proc/<grader>/environ, root and cwd are unreachable: the sandbox's /proc shows only itself."""
    assert attack(tmp_path, zygote, "environ", os.getpid()) is False
    assert attack(tmp_path, zygote, "proc_root", os.getpid()) is False


@pytest.mark.parametrize("who", ["zygote", "grader"])
def test_no_process_outside_can_be_signalled_or_traced(tmp_path, zygote, who):
    """Signals, ptrace and process_vm_readv reach neither the shared zygote nor the grader."""
    pid = zygote.process.pid if who == "zygote" else os.getpid()
    for name in ("signal", "ptrace", "process_vm_readv"):
        assert attack(tmp_path, zygote, name, pid) is False, name


def test_killing_the_zygote_fails_and_the_next_student_is_graded(tmp_path, zygote):
    """A SIGKILL aimed at the shared zygote fails; the zygote lives and serves the next submission."""
    assert attack(tmp_path, zygote, "kill", zygote.process.pid) is False
    assert zygote.process.poll() is None
    assert attack(tmp_path, zygote, "udp") is False  # the next grading still gets a sandbox


def test_files_left_in_tmp_and_shm_vanish_and_modules_cannot_be_planted(tmp_path, zygote):
    """/tmp is not writable (only the scratch folder in it), /dev/shm is the sandbox's own, the library is read-only."""
    name = f"sdpa-left-{uuid.uuid4().hex}"
    assert attack(tmp_path, zygote, "write_tmp", f"/tmp/{name}") is False
    assert attack(tmp_path, zygote, "write_tmp", f"/dev/shm/{name}") is True  # its own, private /dev/shm
    assert not Path(f"/tmp/{name}").exists() and not Path(f"/dev/shm/{name}").exists()
    planted = zygote.lib / "planted.py"
    assert attack(tmp_path, zygote, "plant_module", str(planted)) is False
    assert not planted.exists()


def test_no_network(tmp_path, zygote):
    """No TCP (even to this machine), no UDP, no netlink, no abstract unix socket outside."""
    with socket.create_server(("127.0.0.1", 0)) as server, socket.socket(socket.AF_UNIX) as abstract:
        name = f"sdpa-probe-{uuid.uuid4().hex}"
        abstract.bind("\0" + name)
        abstract.listen()
        assert attack(tmp_path, zygote, "tcp", server.getsockname()[1]) is False
        assert attack(tmp_path, zygote, "abstract_socket", name) is False
    assert attack(tmp_path, zygote, "udp") is False
    assert attack(tmp_path, zygote, "netlink") is False


@pytest.mark.parametrize(
    "name",
    ["exec", "sysv_shm", "posix_mq", "keyring", "io_uring", "bpf", "unshare", "tiocsti"],
)
def test_system_calls_around_the_rules_fail(tmp_path, zygote, name):
    """exec, shared kernel objects (SysV, message queues, keyrings), io_uring, bpf, new namespaces, TIOCSTI: refused."""
    assert attack(tmp_path, zygote, name) is False


@pytest.fixture(scope="module")
def hand_made_zygote():
    """A zygote whose seccomp filter is the hand-made fallback (SDPA_SECCOMP=hand-made), its workers unprivileged
    (one mode only: a zygote costs seconds to start; the filter is the same for either user)."""
    site = Path(sysconfig.get_paths()["purelib"])
    if os.geteuid() == 0 and not readable_by_others(site):
        pytest.skip(f"an unprivileged user cannot reach {site}: a folder above it is closed to others")
    before = os.environ.get(seccomp_policy.FORCE)
    os.environ[seccomp_policy.FORCE] = "hand-made"
    try:
        started = Zygote(unprivileged_after_import=True)
    finally:
        if before is None:
            del os.environ[seccomp_policy.FORCE]
        else:
            os.environ[seccomp_policy.FORCE] = before
    started.wait_ready()
    yield started
    started.close()


def test_the_seccomp_filter_is_libseccomps_where_it_is_found(tmp_path, zygote):
    """The sandbox's report names the filter's maker: libseccomp where the grader finds it, else the hand-made one."""
    with _sandbox(tmp_path, zygote, 1024) as box:
        assert box.load().ok, box.load_reply
    expected = "seccomp filter (libseccomp " if ctypes.util.find_library("seccomp") else "seccomp filter (hand-made"
    assert box.confinement["seccomp"].startswith(expected), box.confinement


@pytest.mark.timeout(120)
def test_the_hand_made_fallback_refuses_the_same_calls(tmp_path, hand_made_zygote):
    """With the fallback forced, the report says so, and the calls the filter governs are still refused."""
    with _sandbox(tmp_path, hand_made_zygote, 1024) as box:
        assert box.load().ok, box.load_reply
    assert box.confinement["seccomp"].startswith("seccomp filter (hand-made, x86-64; SDPA_SECCOMP"), box.confinement
    for name in ("exec", "sysv_shm", "posix_mq", "keyring", "io_uring", "bpf", "unshare", "tiocsti", "udp"):
        assert attack(tmp_path, hand_made_zygote, name) is False, name


def test_a_program_dropped_in_memory_cannot_run(tmp_path, zygote):
    """A binary the submission carries, written to a memfd, cannot be executed."""
    program = torch.frombuffer(bytearray(Path("/bin/true").read_bytes()), dtype=torch.uint8)
    assert attack(tmp_path, zygote, "memfd_exec", program) is False


def _running(marker: str) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "comm").read_text().strip() == marker:
                found.append(entry.name)
        except OSError:
            pass
    return found


def test_everything_the_submission_started_dies_with_it(tmp_path, zygote):
    """A daemon in its own session dies when the grading ends: it lives in the sandbox's PID namespace."""
    marker = f"sdpa{uuid.uuid4().hex[:10]}"
    assert attack(tmp_path, zygote, "leftover", marker) is True
    for _ in range(100):
        if not _running(marker):
            break
        time.sleep(0.02)
    assert _running(marker) == []


def test_a_clone_parent_helper_dies_with_the_submission(tmp_path, zygote):
    """A helper made with clone(CLONE_PARENT) is still inside the PID namespace, and dies with it."""
    marker = f"sdpa{uuid.uuid4().hex[:10]}"
    assert attack(tmp_path, zygote, "clone_parent", marker) is True
    for _ in range(100):
        if not _running(marker):
            break
        time.sleep(0.02)
    assert _running(marker) == []
    assert zygote.process.poll() is None


def test_a_fork_bomb_is_capped(tmp_path, zygote):
    """At most limits' process count (256) at once, whatever user the grader runs as."""
    assert attack(tmp_path, zygote, "fork_bomb", 300) is False
    assert attack(tmp_path, zygote, "fork_bomb", 20) is True


FILLS_SCRATCH = """
def attention_scores(Q, K):
    with open("filler", "wb") as handle:  # in the scratch folder, on the sandbox's private /tmp
        handle.write(b"x" * (2 << 20))
    return Q @ K.transpose(-2, -1)
"""


def test_the_private_tmp_has_the_size_of_limits_tmp_mb(tmp_path, zygote):
    """limits.tmp_mb sizes the sandbox's private /tmp (scratch folder included): 2 MiB fit in 64 MiB, not in 1."""
    path = tmp_path / "attention.py"
    path.write_text(FILLS_SCRATCH)
    q = torch.ones(2, 3)
    for tmp_mb, fits in ((64, True), (1, False)):
        box = Sandbox(path, limits(memory_mb=1024, output_kb=8192, load_timeout=10, tmp_mb=tmp_mb), zygote=zygote)
        with box:
            assert box.load().ok, box.load_reply
            if box.confinement["namespaces"].startswith("missing"):
                pytest.skip(f"no private /tmp here: {box.confinement['namespaces']}")
            reply = box.call("attention_scores", (q, q), timeout=20)
        assert reply.ok is fits, (tmp_mb, reply.describe())


def test_memory_is_capped_across_the_submissions_processes(tmp_path, zygote):
    """Three forked helpers of 900 MiB each cannot hold more than limits.memory_mb (2048) together."""
    if os.geteuid() != 0:
        pytest.skip("cgroups need a grader that may make them (root here)")
    assert attack(tmp_path, zygote, "memory_in_helpers", 900, memory_mb=2048) is not True
    assert attack(tmp_path, zygote, "memory_in_helpers", 200, memory_mb=2048) is True


def test_a_missing_mechanism_is_named_and_require_sandbox_refuses(tmp_path, monkeypatch):
    """Where a mechanism is missing the report names it; with require_sandbox the submission is not run at all."""
    import autograder.sandbox.client as client

    real = client.confinement
    weaker = {"landlock": "missing (no Landlock)"}
    monkeypatch.setattr(client, "confinement", lambda conn, timeout: {**real(conn, timeout), **weaker})
    path = tmp_path / "submission.py"
    path.write_text(PROBE)
    with Sandbox(
        path, limits(memory_mb=1024, output_kb=64, load_timeout=10, after_hang_timeout=2), block_fused=False
    ) as box:
        assert box.load().ok
        assert describe(box.confinement).startswith("WEAKER SANDBOX: landlock missing (no Landlock)")
    required = limits(memory_mb=1024, output_kb=64, load_timeout=10, after_hang_timeout=2, require_sandbox=True)
    with Sandbox(path, required) as box:
        with pytest.raises(SandboxMissing, match="WEAKER SANDBOX"):
            box.load()


HELPER_WORKS = """
import os, time

def attention_output(weights, V):
    helper = os.fork()
    if helper == 0:  # the work, in a helper process: the student's own process only waits
        while time.process_time() < 0.3:
            pass
        os._exit(0)
    os.waitpid(helper, 0)
    return weights @ V
"""


def test_a_timed_call_is_charged_the_cpu_time_of_helper_processes(tmp_path, zygote):
    """The timing clock is the submission's cgroup: 0.3 s of CPU burnt in a forked helper is charged to the call."""
    path = tmp_path / "attention.py"
    path.write_text(HELPER_WORKS)
    chosen = limits(memory_mb=1024, output_kb=64, load_timeout=10, after_hang_timeout=2)
    with Sandbox(path, chosen, zygote=zygote) as box:
        if box.cgroups.cpu_seconds() is None:
            pytest.skip(f"no CPU-time cgroup for this grader here: {box.cgroups.describe()}")
        assert box.load().ok, box.load_reply
        reply = box.timed(
            "attention_output", [[torch.ones(2, 3), torch.ones(3, 4)]], [((2, 4), torch.float32)], timeout=20
        )
    assert reply.ok, reply.describe()
    assert reply.cpu_seconds >= 0.25, f"{reply.cpu_seconds} s of CPU charged for 0.3 s of work in a helper"
    assert reply.outputs[0][0].tolist() == [[3.0] * 4] * 2


@pytest.fixture(scope="module", params=MODES)
def worker_as(request):
    """A zygote whose workers run as root itself (no privilege drop: the grader's Python is closed to others),
    or as the unprivileged user; with the uid its workers have."""
    if os.geteuid() != 0:
        pytest.skip("the tests do not run as root")
    site = Path(sysconfig.get_paths()["purelib"])
    if request.param == "unprivileged" and not readable_by_others(site):
        pytest.skip(f"an unprivileged user cannot reach {site}: a folder above it is closed to others")
    import autograder.sandbox.zygote as zygotes

    real = zygotes.privilege_drop
    zygotes.privilege_drop = lambda: (False, "the worker stays root (test)")
    try:
        started = Zygote(unprivileged_after_import=request.param == "unprivileged")
    finally:
        zygotes.privilege_drop = real
    started.wait_ready()
    yield started, (0 if request.param == "root" else NOBODY)
    started.close()


def _state(path: Path) -> tuple:
    info = path.lstat()
    xattrs = {name: os.getxattr(path, name) for name in os.listxattr(path)}
    return info.st_mode, info.st_uid, info.st_gid, info.st_mtime_ns, info.st_ctime_ns, path.read_bytes(), xattrs


def test_host_files_metadata_cannot_change(tmp_path, worker_as):
    """A host file the worker's user owns keeps its mode, owner, times, xattrs, content, name and existence."""
    zygote, uid = worker_as
    folder = ROOT / f".canary-{uuid.uuid4().hex}"
    folder.mkdir()
    canary = folder / "canary"
    try:
        canary.write_bytes(b"canary\n")
        os.setxattr(canary, "user.canary", b"1")
        for path in (folder, canary):
            os.chown(path, uid, uid)
        before = _state(canary)
        assert attack(tmp_path, zygote, "metadata", str(canary)) is False
        assert _state(canary) == before
        assert sorted(p.name for p in folder.iterdir()) == ["canary"]
    finally:
        remove_tree(folder)
