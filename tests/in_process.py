"""A runner for the project's own tests: the student's functions called in this process, as the worker calls them.

Never used to grade (student code runs only in the worker's sandbox); it lets a test put a
function through the checks' proxy (``checks/student.py``) without starting a sandbox.
"""

from __future__ import annotations

import time
import types

import torch

from autograder.checks.student import FUNCTIONS
from autograder.sandbox import worker
from autograder.sandbox.runner import Reply, reply_from

API = FUNCTIONS  # the reference's functions: the one list (autograder/checks/student.py)


class InProcess:
    """Runs the functions of ``namespace`` in this process, with the same requests as the worker."""

    def __init__(self, namespace: dict) -> None:
        self.module = types.SimpleNamespace(**{name: namespace[name] for name in API if name in namespace})
        self.load_reply = Reply(True)
        self.source = ""

    def call(self, target: str, args=(), kwargs=None, *, timeout: float, **options) -> Reply:
        copies = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
        request = {"target": target, "args": copies, "kwargs": kwargs or {}, **options}
        started = time.perf_counter()
        try:
            answer = worker._call(self.module, request)
        except BaseException as exc:  # noqa: BLE001 - a student's error becomes a failed check
            answer = worker._error(exc)
        return reply_from(answer, time.perf_counter() - started)

    def close(self) -> None:
        pass
