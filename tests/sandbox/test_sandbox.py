"""The worker sandbox: what student code can see, and what survives it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from autograder.checks.student import Student
from autograder.config import load_settings
from autograder.grade import measures_memory
from autograder.sandbox.client import GraderBusy, Sandbox
from tests.helpers import ROOT, limits

BLOCKWISE_ON = ROOT / "tests" / "blockwise_on.toml"

PROBE = """
import importlib.util, os, sys, torch

def attention_scores(Q, K):
    names = ("autograder", "reference", "tests", "torch")
    return torch.tensor([importlib.util.find_spec(name) is not None for name in names])

def scale_scores(scores, d_k):
    return torch.tensor([len(os.environ), int(os.path.exists("attention.py")), len(os.listdir("."))])

def causal_mask(T_q, T_k=None, *, device=None):
    return torch.tensor(float(torch.get_num_threads()))

def padding_mask(valid_lens, T_k):
    valid_lens.add_(1)
    return valid_lens
"""


def test_student_code_cannot_import_the_grader(sandbox):
    """The worker's path holds torch but not the autograder, the reference or the tests."""
    with sandbox(PROBE) as box:
        assert box.load().ok
        found = box.call("attention_scores", (torch.zeros(1), torch.zeros(1)), timeout=10).value
    assert found.tolist() == [False, False, False, True]


def test_student_code_runs_in_a_bare_scratch_folder(sandbox):
    """A minimal environment, a scratch folder holding only the submission (and its output log), one thread."""
    with sandbox(PROBE) as box:
        box.load()
        env_size, has_file, entries = box.call("scale_scores", (torch.zeros(1), 4), timeout=10).value.tolist()
        threads = box.call("causal_mask", (3,), timeout=10).value
    assert env_size <= 6 and has_file == 1 and entries <= 3
    assert float(threads) == 1.0


def test_in_place_changes_are_seen_by_the_grader(sandbox):
    """Mutation is judged in the grader's process, from the argument the worker hands back."""
    with sandbox(PROBE) as box:
        box.load()
        reply = Student(box, timeout=10).run("padding_mask", torch.tensor([1, 2]), 3)
    assert reply.ok and reply.mutated == [True, False]


GROWS = """
import gc, torch

def attention_scores(Q, K):
    taken = torch.ones(8 << 20)  # 32 MiB, freed on return
    return torch.tensor([float(gc.get_freeze_count() > 0), float(taken[0])])
"""


@pytest.mark.parametrize("measured", [True, False], ids=["part_on", "part_off"])
def test_memory_is_measured_on_every_call_or_on_none(sandbox, measured):
    """Where a check reads what a call takes (the blockwise part on: grade.measures_memory), every call's memory is
    measured and the worker settles after each request (its objects frozen out of later collections, recording._settle);
    elsewhere no call is, and the worker's collections are Python's own. Seen failing with every call measured."""
    settings = load_settings(BLOCKWISE_ON if measured else None)
    assert measures_memory(settings) == measured
    with sandbox(GROWS, measure_memory=measures_memory(settings)) as box:
        assert box.load().ok
        replies = [box.call("attention_scores", (torch.zeros(1), torch.zeros(1)), timeout=10) for _ in range(2)]
    for reply in replies:
        assert reply.ok and reply.value.tolist() == [float(measured), 1.0]
        if measured:
            assert reply.grown_bytes >= 24 << 20 and reply.touched_bytes is None  # pages: only where asked
        else:
            assert reply.grown_bytes is None and reply.touched_bytes is None and reply.kernel_bytes is None


def test_a_hung_function_is_not_waited_on_twice(sandbox):
    """After a time-out the child is replaced, the hung function is skipped, and others run with a short limit."""
    source = PROBE + "\ndef attention_output(w, V):\n    while True:\n        pass\n"
    with sandbox(source) as box:
        box.load()
        first = box.call("attention_output", (torch.zeros(1), torch.zeros(1)), timeout=2)
        second = box.call("attention_output", (torch.zeros(1), torch.zeros(1)), timeout=2)
        after = box.call("causal_mask", (3,), timeout=10)
    assert first.error == "Timeout" and first.hung and "no answer within 2 s" in first.message
    assert second.error == "Timeout" and second.hung and "not run again" in second.message
    assert after.ok
    assert box.restarts == 2


STUDENT_TIMEOUT = """
import time
import torch


class Timeout(Exception):
    pass


def attention_scores(Q, K):
    raise Timeout("the student's own exception, named as the sandbox's hang")


def attention_output(weights, V):
    time.sleep(1.5)
    return torch.ones(1)
"""


def test_a_student_exception_named_timeout_is_not_a_hang(sandbox):
    """An exception class the student calls Timeout is the student's error, not the sandbox's finding that a call
    hung: the function is called again, and later calls keep their whole limit (before: every later call got the
    after-hang limit, 1 s here, and a 1.5 s function timed out)."""
    with sandbox(STUDENT_TIMEOUT) as box:
        box.load()
        raised = box.call("attention_scores", (torch.zeros(1), torch.zeros(1)), timeout=10)
        again = box.call("attention_scores", (torch.zeros(1), torch.zeros(1)), timeout=10)
        slow = box.call("attention_output", (torch.zeros(1), torch.zeros(1)), timeout=10)
    assert raised.error == "Timeout" and not raised.hung and "the student's own exception" in raised.message
    assert again.error == "Timeout" and "not run again" not in again.message
    assert slow.ok, slow.describe()
    assert box.hung == set() and box.restarts == 1  # its first start only: no call was killed


def test_privileges_are_dropped_only_where_nobody_can_run_python(tmp_path):
    """As root, the worker runs as nobody when Python and torch are readable by others;
    the reason is said either way."""
    from autograder.sandbox.processes import privilege_drop, readable_by_others

    hidden = tmp_path / "private"
    hidden.mkdir(mode=0o700)
    (hidden / "file.py").write_text("x = 1\n")
    (tmp_path / "open.py").write_text("x = 1\n")
    tmp_path.chmod(0o755)
    (tmp_path / "open.py").chmod(0o644)
    assert not readable_by_others(hidden / "file.py")
    assert readable_by_others(tmp_path / "open.py") == all(p.stat().st_mode & 0o001 for p in tmp_path.parents)
    drops, reason = privilege_drop()
    assert reason and (drops == (reason == "the worker runs as nobody"))


BUSY = """
import time, torch

def attention_output(weights, V):
    end = time.process_time() + 0.3
    while time.process_time() < end:
        pass
    return weights @ V
"""


def test_a_timed_call_is_charged_the_students_own_cpu_time(sandbox):
    """The kernel's CPU count of a timed call is that of the student's process (PID 1 of its sandbox),
    not its keeper's."""
    with sandbox(BUSY) as box:
        assert box.load().ok
        reply = box.timed(
            "attention_output", [[torch.ones(2, 3), torch.ones(3, 4)]], [((2, 4), torch.float32)], timeout=20
        )
    assert reply.ok, reply.describe()
    assert reply.cpu_seconds >= 0.25, f"{reply.cpu_seconds} s of CPU charged for 0.3 s of work"
    assert reply.outputs[0][0].tolist() == [[3.0] * 4] * 2


FUSED_PROBE = """
import _thread, time, torch
import torch.nn.functional as F

def _q():
    return torch.randn(1, 2, 3, 4)

CALLS = {
    "F": lambda: F.scaled_dot_product_attention(_q(), _q(), _q()),
    "vars": lambda: vars(F)["scaled_dot_" + "product_attention"](_q(), _q(), _q()),
    "binding": lambda: torch._C._nn.scaled_dot_product_attention(_q(), _q(), _q()),
    "flash_cpu": lambda: torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(_q(), _q(), _q()),
    "math": lambda: torch.ops.aten._scaled_dot_product_attention_math.default(_q(), _q(), _q()),
    "mha_forward": lambda: torch.nn.MultiheadAttention(4, 2, batch_first=True)(_q()[0], _q()[0], _q()[0]),
    "mha_function": lambda: F.multi_head_attention_forward(*([None] * 13)),
}

def _outcome(call):
    try:
        call()
        return "ran"
    except Exception as error:
        return type(error).__name__ + ": " + str(error)

def attention_scores(Q, K):
    found = {name: _outcome(call) for name, call in CALLS.items()}
    done = []
    _thread.start_new_thread(lambda: done.append(_outcome(CALLS["F"])), ())
    while not done:
        time.sleep(0.001)
    found["raw_thread"] = done[0]
    return found
"""


def test_fused_attention_is_unreachable_in_the_students_sandbox_only(sandbox, tmp_path):
    """Every fused entry point raises 'not available in this assignment' for the student; the reference's sandbox
    (trusted code, same zygote) and the grading process keep them."""
    q = torch.randn(1, 2, 3, 4)
    with sandbox(FUSED_PROBE) as box:
        assert box.load().ok, box.load_reply
        found = box.call("attention_scores", (q, q), timeout=30)
        path = tmp_path / "trusted" / "attention.py"
        path.parent.mkdir()
        path.write_text(FUSED_PROBE)
        trusted = Sandbox(
            path,
            limits(memory_mb=2048, output_kb=64, load_timeout=10, after_hang_timeout=1),
            zygote=box.zygote,
            block_fused=False,
        )
        with trusted:
            assert trusted.load().ok
            allowed = trusted.call("attention_scores", (q, q), timeout=30)
    assert found.ok, found.describe()
    assert set(found.value) == {
        "F",
        "vars",
        "binding",
        "flash_cpu",
        "math",
        "mha_forward",
        "mha_function",
        "raw_thread",
    }
    for name, outcome in found.value.items():
        assert outcome.startswith("NotAvailable") and "not available in this assignment" in outcome, (name, outcome)
    assert allowed.ok and allowed.value["F"] == "ran" and allowed.value["flash_cpu"] == "ran", allowed.value
    assert torch.nn.functional.scaled_dot_product_attention(q, q, q).shape == q.shape  # the grader's oracle


STARVED = """
import time

def attention_output(weights, V):
    end = time.process_time() + 0.4  # 0.4 s of the student's own CPU time, well within a 1.5 s limit
    while time.process_time() < end:
        pass
    return weights @ V

def scale_scores(scores, d_k):
    time.sleep(60)  # the student's own choice: its time runs while it sleeps
"""


class _Starved:
    """The student's process pinned to one CPU beside ``busy`` busy processes, each in a session (and so a
    scheduling group) of its own: the kernel keeps it waiting for that CPU most of the time, as on a loaded
    machine, for this process alone."""

    def __init__(self, pid: int, busy: int) -> None:
        self.pid, self.count = pid, busy

    def __enter__(self):
        cpu = min(os.sched_getaffinity(0))
        os.sched_setaffinity(self.pid, {cpu})
        self.busy = [
            subprocess.Popen(
                [sys.executable, "-c", f"import os; os.sched_setaffinity(0, {{{cpu}}})\nwhile True: pass"],
                start_new_session=True,
            )
            for _ in range(self.count)
        ]
        time.sleep(0.5)  # they run
        return self

    def __exit__(self, *exc):
        for process in self.busy:
            process.kill()
            process.wait()


def _waited(pid: int) -> float:
    """Seconds ``pid`` has spent runnable but waiting for a CPU (the kernel's schedstat, its second field)."""
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[1]) / 1e9


def test_a_call_slowed_by_the_machine_is_not_the_students_timeout(sandbox):
    """A call that needs 0.4 s of CPU but waits for one (pinned beside 5 busy processes) is kept waiting by the
    kernel longer than its 1.5 s limit, and is answered: only the student's own time counts against the limit."""
    with sandbox(STARVED) as box:
        assert box.load().ok
        pid = box._measured
        with _Starved(pid, 5):
            before = _waited(pid)
            reply = box.call("attention_output", (torch.ones(2, 3), torch.ones(3, 4)), timeout=1.5)
            waited = _waited(pid) - before
    assert reply.ok, reply.describe()
    # the kernel's count of the time it kept the call from a CPU, not a clock: it only grows on a busier machine
    assert waited > 1.5, f"the process waited only {waited:.1f} s for a CPU: the test proves nothing"


def test_a_call_the_machine_never_lets_run_is_the_graders_failure(sandbox):
    """Pinned beside 12 busy processes, a call gets a few per cent of a CPU: past 6 times its limit by the clock,
    with less than the limit of its own time, it is the grader's failure (GraderBusy), not the student's timeout."""
    with sandbox(STARVED) as box:
        assert box.load().ok
        with _Starved(box._measured, 12), pytest.raises(GraderBusy):
            box.call("attention_output", (torch.ones(2, 3), torch.ones(3, 4)), timeout=0.5)
        assert box.call("attention_output", (torch.ones(2, 3), torch.ones(3, 4)), timeout=10).ok  # a new child


def test_a_student_that_sleeps_runs_out_of_its_own_time(sandbox):
    """Sleeping is the student's own time: a call that sleeps is its timeout (not answered, not the grader's
    GraderBusy), though it used no CPU."""
    with sandbox(STARVED) as box:
        assert box.load().ok
        reply = box.call("scale_scores", (torch.ones(2), 4), timeout=1.0)
    assert reply.error == "Timeout"
