"""No process of a grading outlives it, and no cgroup: grader SIGKILLed mid-grading, a batch's grading killed, Ctrl-C.

The submission leaves CPU burners at import, each in a session of its own (``setsid``), and hangs in
``attention_scores``; the grader runs as a real ``sdpa-grade`` process, as root and as an unprivileged user.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import sysconfig
import time
import uuid
from pathlib import Path

import pytest

from autograder.sandbox import cgroups
from autograder.sandbox.processes import NOBODY, readable_by_others
from tests.helpers import BIN, REFERENCE, ROOT

BURNERS = """
import ctypes as _ctypes
import os as _os


def _burn(tag):
    _ctypes.CDLL(None).prctl(15, tag, 0, 0, 0)  # PR_SET_NAME: the test finds the burners by it
    while True:
        pass


for _ in range(4):  # CPU burners in sessions of their own, started as the submission loads
    if _os.fork() == 0:
        _os.setsid()
        _burn({marker!r})


def attention_scores(Q, K):
    while True:
        pass
"""
MODES = ["root", "unprivileged"]


def _submission(folder: Path, marker: bytes) -> Path:
    path = folder / "attention.py"
    path.write_text(REFERENCE.read_text() + BURNERS.format(marker=marker))
    path.chmod(0o644)
    return path


def _processes() -> dict[int, tuple[int, str, str]]:
    """Every process that runs (zombies left to a subreaper, this test process maybe, have ended): pid -> (parent
    pid, start time, name)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            name = stat[stat.index("(") + 1 : stat.rindex(")")]
            fields = stat.rsplit(")", 1)[1].split()
            if fields[0] != "Z":
                found[int(entry.name)] = (int(fields[1]), fields[19], name)
    return found


def _tree(root: int) -> dict[int, tuple[int, str, str]]:
    """``root`` and every process under it, now."""
    table = _processes()
    tree, frontier = {}, [root]
    while frontier:
        pid = frontier.pop()
        if pid in table:
            tree[pid] = table[pid]
            frontier += [child for child, (parent, _, _) in table.items() if parent == pid]
    return tree


def _wait_for(condition, seconds: float):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.2)
    return condition()


def _alive(tree: dict) -> list[str]:
    """The processes of ``tree`` still running (same PID, same start time)."""
    now = _processes()
    return [f"{pid} {name}" for pid, (_, started, name) in tree.items() if pid in now and now[pid][1] == started]


def _groups_of(pids) -> list[Path]:
    """The cgroups owned by any of ``pids``, wherever this machine puts them."""
    parents = {
        p
        for p in (cgroups._own("memory"), cgroups._own("pids"), cgroups._own("cpuacct"), cgroups._own_v2())
        if p is not None
    }
    return [g for parent in parents for pid in pids for g in parent.glob(f"sdpa-owner-*.{pid}.*")]


def _grader(mode: str, args: list[str]) -> subprocess.Popen:
    """``sdpa-grade`` with ``args``, in a process group of its own (as a terminal's job), as ``mode``."""
    if mode == "root" and os.geteuid() != 0:
        pytest.skip("the tests do not run as root")
    user = {}
    if mode == "unprivileged":
        if os.geteuid() != 0:
            user = {}
        elif not all(
            readable_by_others(path)
            for path in (
                Path(sys.executable).resolve(),
                ROOT / "pyproject.toml",
                Path(sysconfig.get_paths()["purelib"]),
            )
        ):
            pytest.skip("an unprivileged user cannot run this Python or reach the install: a folder above it is closed")
        else:
            user = {"user": NOBODY, "group": NOBODY, "extra_groups": []}
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "TMPDIR": "/tmp", "HOME": "/tmp", "LANG": "C.UTF-8"}
    return subprocess.Popen(
        [str(BIN / "sdpa-grade"), *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        **user,
    )


def _shared_folder(tmp_path: Path) -> Path:
    """A folder an unprivileged grader can read and write (tmp_path's parents are closed to others)."""
    folder = Path("/tmp") / f"sdpa-leftovers-{uuid.uuid4().hex[:8]}"
    folder.mkdir(mode=0o777)
    folder.chmod(0o777)
    return folder


def _burning(grader: subprocess.Popen, marker: bytes, count: int):
    """Wait until ``count`` burners run under the grader; its whole process tree then."""

    def seen():
        tree = _tree(grader.pid)
        return tree if sum(name == marker.decode() for _, _, name in tree.values()) >= count else None

    tree = _wait_for(seen, 120)
    assert tree, f"the burners never started (grader exit {grader.poll()})"
    return tree


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("mode", MODES)
def test_a_grader_killed_mid_grading_leaves_no_process_and_no_cgroup(tmp_path, mode):
    """SIGKILL of `sdpa-grade` while the submission hangs: its zygote, sandbox and setsid burners die with it, and
    its groups are gone once the next grading on the machine has started."""
    marker = f"burn{uuid.uuid4().hex[:8]}".encode()
    folder = _shared_folder(tmp_path)
    try:
        grader = _grader(mode, [str(_submission(folder, marker)), "--json", str(folder / "results.json")])
        tree = _burning(grader, marker, 4)
        owned = _groups_of(tree)
        grader.kill()
        grader.wait()
        left = _wait_for(lambda: not _alive(tree), 10)
        assert left, f"still running after the grader was killed: {_alive(tree)}"
        cgroups.Cgroups(f"next-{uuid.uuid4().hex[:8]}", memory_bytes=1 << 30, processes=16).close()  # the next grading
        assert not [g for g in owned if g.exists()]
    finally:
        subprocess.run(["rm", "-rf", str(folder)], check=False)


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("mode", MODES)
def test_a_batch_interrupted_with_ctrl_c_leaves_no_process_and_no_cgroup(tmp_path, mode):
    """SIGINT to the batch's process group (Ctrl-C) while two gradings hang: the batch exits, and nothing it
    started runs on, and no group of its gradings is left."""
    marker = f"burn{uuid.uuid4().hex[:8]}".encode()
    folder = _shared_folder(tmp_path)
    try:
        for student in ("ann", "ben"):
            (folder / "class" / student).mkdir(parents=True)
            _submission(folder / "class" / student, marker)
        subprocess.run(["chmod", "-R", "a+rwX", str(folder)], check=True)
        batch = _grader(mode, ["batch", str(folder / "class"), "--jobs", "2", "--json-dir", str(folder / "out")])
        tree = _burning(batch, marker, 8)
        os.killpg(batch.pid, signal.SIGINT)
        batch.wait(timeout=60)
        left = _wait_for(lambda: not _alive(tree), 10)
        assert left, f"still running after Ctrl-C: {_alive(tree)}"
        assert not [g for g in _groups_of(tree) if g.exists()]
    finally:
        subprocess.run(["rm", "-rf", str(folder)], check=False)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_batch_grading_that_crashes_leaves_nothing_and_the_batch_goes_on(tmp_path):
    """A batch's grading process killed mid-grading (the grader's crash): its sandbox and burners die at once,
    its groups are removed, and the batch goes on (the student is graded again, as after any grader error)."""
    if os.geteuid() != 0:
        pytest.skip("the tests do not run as root")
    marker = f"burn{uuid.uuid4().hex[:8]}".encode()
    folder = _shared_folder(tmp_path)
    try:
        (folder / "class" / "ann").mkdir(parents=True)
        _submission(folder / "class" / "ann", marker)
        batch = _grader("root", ["batch", str(folder / "class"), "--json-dir", str(folder / "out")])
        tree = _burning(batch, marker, 4)
        children = [pid for pid, (parent, _, _) in tree.items() if parent == batch.pid]
        grading = next(pid for pid in children if _groups_of([pid]))  # the grading, not the zygote
        zygote = next(pid for pid in children if pid != grading)
        doomed = {**_tree(grading), **_tree(zygote)}  # the zygote's children now: this grading's sandbox alone
        del doomed[zygote]
        owned = _groups_of([grading])
        os.kill(grading, signal.SIGKILL)
        left = _wait_for(lambda: not _alive(doomed), 10)
        assert left, f"still running after the grading was killed: {_alive(doomed)}"
        assert _wait_for(lambda: not [g for g in owned if g.exists()], 10)
        assert batch.poll() is None  # the batch goes on
        os.killpg(batch.pid, signal.SIGINT)
        batch.wait(timeout=60)
    finally:
        if batch.poll() is None:
            os.killpg(batch.pid, signal.SIGKILL)
        subprocess.run(["rm", "-rf", str(folder)], check=False)


HOLDER = """
import sys
from pathlib import Path

import torch

from autograder.sandbox.client import Sandbox
from autograder.sandbox.zygote import Zygote
from tests.helpers import limits

zygote = Zygote(unprivileged_after_import=True)
box = Sandbox(Path(sys.argv[1]), limits(memory_mb=2048, output_kb=64, load_timeout=60, after_hang_timeout=1),
              zygote=zygote)
box.__enter__()
assert box.load().ok, box.load_reply
box.call("attention_scores", (torch.ones(2, 3), torch.ones(2, 3)), timeout=600)
"""


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_grader_killed_beside_a_zygote_that_became_nobody_leaves_no_process(tmp_path):
    """The grader as root, its zygote, sandbox and burners unprivileged (the zygote becomes nobody after importing
    torch, as the sandbox tests run it): SIGKILL of the grader mid-call ends them all."""
    if os.geteuid() != 0:
        pytest.skip("the tests do not run as root")
    if not readable_by_others(Path(sysconfig.get_paths()["purelib"])):
        pytest.skip("an unprivileged user cannot reach the install: a folder above it is closed to others")
    marker = f"burn{uuid.uuid4().hex[:8]}".encode()
    folder = _shared_folder(tmp_path)
    try:
        grader = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(_submission(folder, marker))],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        tree = _burning(grader, marker, 4)
        assert any(os.stat(f"/proc/{pid}").st_uid == NOBODY for pid in tree if os.path.exists(f"/proc/{pid}"))
        grader.kill()
        grader.wait()
        assert _wait_for(lambda: not _alive(tree), 10), f"still running after the grader was killed: {_alive(tree)}"
    finally:
        subprocess.run(["rm", "-rf", str(folder)], check=False)
