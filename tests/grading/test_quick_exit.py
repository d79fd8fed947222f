"""`sdpa-grade` ends without the interpreter's teardown (quick_exit.py), and loses nothing by it: its output
is flushed, its exit code kept, its atexit callbacks run, its temporary folders gone, and a thread still running is
waited for."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.helpers import BIN, REFERENCE, maximum, run, total

# a program that ends through exit_now(3): output left in stdout's buffer (a pipe: block-buffered), an atexit callback,
# a module-level object whose __del__ only the interpreter's teardown calls, and maybe a thread still running
PROGRAM = """
import atexit, sys, threading, time
from autograder.quick_exit import exit_now

class Teardown:
    def __del__(self):
        print("torn down", flush=True)

KEPT = Teardown()
atexit.register(lambda: print("atexit ran"))
if sys.argv[1:] == ["thread"]:
    threading.Thread(target=lambda: (time.sleep(0.5), print("thread done"))).start()
print("buffered", end="")
exit_now(3)
"""


def _ended(*args: str) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONUNBUFFERED"}  # stdout buffered, as a rule
    return subprocess.run(
        [sys.executable, "-c", PROGRAM, *args], capture_output=True, text=True, timeout=60, check=False, env=env
    )


def test_exit_now_keeps_the_code_the_output_and_the_atexit_callbacks_and_skips_the_teardown():
    ended = _ended()
    assert (ended.returncode, ended.stdout, ended.stderr) == (3, "bufferedatexit ran\n", "")


def test_exit_now_waits_for_a_running_thread_through_the_normal_exit():
    ended = _ended("thread")
    assert ended.returncode == 3
    assert ended.stdout.splitlines() == ["bufferedthread done", "atexit ran", "torn down"]


@pytest.mark.slow  # one cold sdpa-grade: 5 to 15 s
@pytest.mark.timeout(120)
def test_sdpa_grade_ends_whole_with_its_output_flushed_and_its_folders_gone(tmp_path):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    out = tmp_path / "results.json"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "TMPDIR": str(scratch)}
    graded = run([str(BIN / "sdpa-grade"), "grade", str(REFERENCE), "--json", str(out)], env=env)
    assert graded.returncode == 0, graded.stderr
    full = f"{total():g}/{maximum():g}"  # an attention.py: its knowledge check not handed in
    assert graded.stdout.rstrip().splitlines()[-1].split() == ["total", full], graded.stdout[-500:]
    assert json.loads(out.read_text())["score"] == total()
    assert os.listdir(scratch) == []
