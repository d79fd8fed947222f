"""A runner for the project's own tests: the student's functions called in this process, as the worker calls them.

Never used to grade (student code runs only in the worker's sandbox); it lets a test put a
function through the checks' proxy (``checks/student.py``) without starting a sandbox. It follows
the same ``Runner`` protocol as the sandbox (autograder/sandbox/protocol.py).
"""

from __future__ import annotations

import os
import time
import types

import pytest
import torch

from autograder.checks.student import FUNCTIONS
from autograder.sandbox.client import _run_delay
from autograder.sandbox.memory import Peak
from autograder.sandbox.protocol import Reply, Runner, mutated, reply_from
from autograder.sandbox.student_side import recording, serving

ALARM = "Timeout (>"  # how pytest-timeout's failure of a check that outlasted its limit begins
API = FUNCTIONS  # the reference's functions: the one list (autograder/checks/student.py)


class InProcess(Runner):
    """Runs the functions of ``namespace`` in this process, with the same requests as the worker."""

    def __init__(self, namespace: dict) -> None:
        self.module = types.SimpleNamespace(**{name: namespace[name] for name in API if name in namespace})
        self.load_reply = Reply(True)
        self.source = ""
        self.confinement = {}  # nothing confines it: tests only
        # the memory a call takes, measured as the sandbox measures its worker, here on this process alone
        recording._map_in_libraries()
        self._peak = Peak(descendants=False, accessed=False)  # its pages are the test's too: not counted
        self._peak.probe(os.getpid())
        self._own = 0.0  # the student's own time in its calls: their wall clock less this process's wait for a CPU

    def own_seconds(self) -> float:
        return self._own

    def charge(self, seconds: float) -> None:
        self._own += seconds

    def _count(self, started: float, delayed: float) -> None:
        """Adds a call's own time (from ``started``, with ``delayed`` this process's run delay then) to the count."""
        self._own += max(time.perf_counter() - started - (_run_delay(os.getpid()) - delayed), 0.0)

    def load(self) -> Reply:
        return self.load_reply

    def call(self, target: str, args=(), kwargs=None, *, timeout: float, pages: bool = False, **options) -> Reply:
        copies = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
        request = {"target": target, "args": copies, "kwargs": kwargs or {}, **options}
        started, delayed = time.perf_counter(), _run_delay(os.getpid())
        self._peak.start()
        try:
            answer = serving._call(self.module, request)
        except BaseException as exc:  # noqa: BLE001 - a student's error becomes a failed check
            answer = serving._error(exc)
        finally:
            self._count(started, delayed)
        if answer.get("error") == "Failed" and answer.get("message", "").startswith(ALARM):
            # the check's own limit (pytest-timeout's alarm) went off in this process during the student's call: the
            # check's time-out, as in a grading, where it goes off in the grader's wait for the worker
            pytest.fail(answer["message"], pytrace=False)
        reply = reply_from(answer, time.perf_counter() - started)
        taken = self._peak.taken(pages)
        reply.grown_bytes = None if taken is None else taken.grown
        reply.touched_bytes = None if taken is None else taken.touched
        reply.unmeasured = self._peak.why
        if reply.ok:  # what the call did to its arguments: our copies, compared with what was sent
            reply.mutated = mutated(args, copies)
        return reply

    def timed(
        self,
        target: str,
        inputs: list[list],
        outputs: list[tuple],
        *,
        timeout: float,
        device: str = "cpu",
        kwargs: dict | None = None,
    ) -> Reply:
        function = getattr(self.module, target)
        results = [[torch.empty(shape, dtype=dtype) for shape, dtype in outputs] for _ in inputs]
        started, cpu, delayed = time.perf_counter(), time.process_time(), _run_delay(os.getpid())
        try:
            for args, slots in zip(inputs, results):
                serving._commit(function(*args, **(kwargs or {})), slots)
        except BaseException as exc:  # noqa: BLE001 - a student's error becomes a failed check
            if isinstance(exc, pytest.fail.Exception) and str(exc).startswith(ALARM):
                raise  # the check's own limit (above)
            return reply_from(serving._error(exc), 0.0)
        finally:
            self._count(started, delayed)
        reply = Reply(True, seconds=time.perf_counter() - started, cpu_seconds=time.process_time() - cpu)
        reply.outputs = results
        return reply

    def close(self) -> None:
        pass
