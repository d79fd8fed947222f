"""The nbgrader path: the hidden checks run inside the student's own kernel, as nbgrader does.

A hidden test cell of the notebook is only ``run_check("<check>", globals())``. The first
cell of a function runs all of that function's checks once, against the functions the
notebook defined, and keeps their scores for the function's later cells. This path trusts
the kernel it runs in, as nbgrader itself does; ``sdpa-grade`` is the tamper-resistant one.
"""

from __future__ import annotations

import inspect
import time
import types

import torch

from autograder.cell_feedback import HiddenCheckFailed
from autograder.sandbox import worker
from autograder.checks.catalogue import catalogue
from autograder.config import load_settings
from autograder.render.text import with_picture
from autograder.sandbox.runner import Reply, reply_from

API = (
    "attention_scores", "scale_scores", "causal_mask", "padding_mask", "masked_softmax", "attention_output",
    "scaled_dot_product_attention", "MultiHeadAttention", "dot_product_variance",
)  # fmt: skip
_SCORES: dict[tuple[int, str], dict] = {}  # (id of the notebook's namespace, function) -> check -> Scored


class InProcess:
    """Runs the student's functions in this process, with the same requests as the worker."""

    def __init__(self, namespace: dict) -> None:
        self.module = types.SimpleNamespace(**{name: namespace[name] for name in API if name in namespace})
        self.load_reply = Reply(True)
        self.hung: set[str] = set()
        self.source = "\n".join(_source_of(namespace[name]) for name in API if name in namespace)

    def call(self, target: str, args=(), kwargs=None, *, timeout: float, **options) -> Reply:
        if target in self.hung:
            return Reply.skipped_after_hang(target)
        # copies: in this process the student could otherwise change the very tensors the grader compares with
        copies = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
        request = {"target": target, "args": copies, "kwargs": kwargs or {}, **options}
        started = time.perf_counter()
        try:
            answer = worker._call(self.module, request)
        except BaseException as exc:  # noqa: BLE001 - a student's error becomes a failed check
            answer = worker._error(exc)
        reply = reply_from(answer, time.perf_counter() - started)
        if reply.error == "Failed" and "Timeout" in reply.message:  # pytest-timeout stopped the call
            self.hung.add(target)
        return reply

    def timed(self, target: str, inputs: list[list], outputs: list[tuple], *, timeout: float, device: str = "cpu") -> Reply:
        """Each entry of ``inputs`` through ``target``, timed here (this path trusts the kernel it runs in)."""
        function = getattr(self.module, target, None)
        copies = [[a.clone().to(device) for a in rep] for rep in inputs]
        cpu, started = time.process_time(), time.perf_counter()
        try:
            if function is None:
                raise AttributeError(f"attention.py has no function named {target}")
            results = [function(*rep) for rep in copies]
            if device == "cuda":
                torch.cuda.synchronize()
        except BaseException as exc:  # noqa: BLE001 - a student's error becomes a failed check
            return reply_from(worker._error(exc), 0.0)
        reply = Reply(True, seconds=time.perf_counter() - started, cpu_seconds=time.process_time() - cpu)
        for result in results:
            values = result if isinstance(result, (tuple, list)) else (result,)
            if len(values) != len(outputs) or not all(isinstance(v, torch.Tensor) and tuple(v.shape) == tuple(shape)
                                                      for v, (shape, _) in zip(values, outputs)):
                return Reply(False, error="TypeError", message=f"returned values that are not {len(outputs)} tensors"
                             f" of shapes {[tuple(shape) for shape, _ in outputs]}")
            reply.outputs.append([v.detach().to("cpu") for v in values])
        return reply

    def close(self) -> None:
        pass


def _source_of(obj) -> str:
    try:
        return inspect.getsource(obj)
    except (OSError, TypeError):
        return ""


def run_check(check: str, namespace: dict) -> None:
    """Pass silently when the student's code passes ``check``; otherwise raise AssertionError with the feedback.

    The error shows only the check's name and its feedback (``HiddenCheckFailed``): no traceback
    into the grader, in the notebook or in the feedback nbgrader generates.
    """
    entry = next((e for e in catalogue() if e.check == check), None)
    if entry is None:
        raise KeyError(f"no hidden check named {check!r}")
    key = (id(namespace), entry.function)
    if key not in _SCORES:
        _SCORES[key] = _grade_function(entry.function, namespace)
    scored = _SCORES[key][check]
    if scored.score < scored.max_score:
        raise HiddenCheckFailed(check, with_picture(scored.feedback, scored.outcome.picture))


def _grade_function(function: str, namespace: dict) -> dict:
    import secrets

    from autograder.grade import run_pytest
    from autograder.plugin import GradingPlugin
    from autograder.scoring import score

    settings = load_settings()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    from reference import attention as reference

    plugin = GradingPlugin(lambda: InProcess(namespace), settings, secrets.randbits(62), device, only_function=function,
                           connect_reference=lambda: InProcess(vars(reference)))
    run_pytest(plugin, settings, timeout=settings["limits"]["call_timeout"])
    return {item.outcome.check: item for item in score(list(plugin.outcomes.values()), settings)}
