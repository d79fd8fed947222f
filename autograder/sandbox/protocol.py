"""The one seam between the checks and whatever runs the student's code: the ``Runner`` protocol and its ``Reply``.

Three runners follow it: ``client.Sandbox`` (the worker's kernel sandbox: every grading),
``grade.Unreadable`` (a submission that could not be read: every call fails as loading did) and
the project's own tests' ``tests/in_process.InProcess`` (the student's functions in the test's process).
The checks' proxy (``checks/student.py``) and the plugin talk to a ``Runner`` and read ``Reply``s;
none of them needs to know which runner it has. Whoever makes a runner owns it: ``close`` is
called once, by the ``with`` block that made it (``grade.run_checks``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol

import torch

MAX_ENTERED = 1000  # names of functions one call entered (a submission's module-level functions)
MAX_ASKED = 1000  # questions one substituted call asks of the functions standing in (checks/substitution.py)


class Failure(Enum):
    """The closed set of the trusted side's own findings about a call, each its ``error`` word. A reply carries one
    only where the runner found it (``Reply.failed``), never from the worker's answer, whose ``error`` is the student's
    exception's name, whatever it is called: a class named Timeout, or "not graded", is the student's own error."""

    HUNG = "Timeout"  # no answer in time
    NOT_LOADED = "NotLoaded"  # the submission did not load: nothing is called
    WORKER_DIED = "WorkerDied"  # the worker process ended during the call
    WIRE = "WireError"  # the answer could not be read, or was not of the expected kinds
    UNREADABLE = "not graded"  # the submission could not be read: nothing ran


class GraderFault(BaseException):
    """The grader's own failure while a check ran (the machine kept the student's process from a CPU, the
    reference's worker failed): the check is the grader's error, and a batch grades the submission again. A
    BaseException, as KeyboardInterrupt is, so that no handler that judges the student's code takes it for the
    student's: an ``except Exception`` around the evidence (the plugin's substituted rerun) would otherwise drop it
    on a busy machine, and the same file would get other words (tests/checks/test_same_words.py)."""


class GraderBusy(GraderFault):
    """A limit ran out by the wall clock while the student's code had not had that much of its own time (the machine
    kept it, or the grader, waiting for a CPU): the grader's failure, never the student's lost points."""


def busy_message(what: str, limit: float, own: float) -> str:
    """Why a limit that ran out by the clock is the machine's, not the student's (GraderBusy)."""
    return (
        f"{what} ran out of its {limit:g} s by the clock while the student's code had {own:.1f} s of its own time:"
        " the machine is too busy to grade fairly"
    )


class RequestRefused(GraderFault):
    """The grader's own request is over the wire's bounds (wire.bounded): refused by the runner before anything is
    written, so the worker stays in step; the grader's error, never the student's lost points. (A substituted call's
    table of answers grown past them by the student's own questions is the student's: checks/substitution.py.)"""


@dataclass(frozen=True)
class Memory:
    """The largest new floating-point storage a call's ops made, as the worker's op record saw it (student_side/
    recording.py ``_Memory``): its elements, the shape of the tensor that made it and the op. Words for a message
    only: what a call takes is ``Reply.grown_bytes``, measured from outside the worker."""

    largest: int
    shape: tuple[int, ...]
    op: str

    @classmethod
    def read(cls, answer) -> Memory | None:
        """The record from a worker's answer, or None where it is not plain numbers and a short name."""
        if not isinstance(answer, dict):
            return None
        largest, shape, op = (answer.get(key) for key in ("largest", "shape", "op"))
        numbers = [largest, *(shape if isinstance(shape, list) else [None])]
        if not all(type(n) is int and n >= 0 for n in numbers) or len(shape) > 16:
            return None
        if not (isinstance(op, str) and len(op) <= 200):
            return None
        return cls(largest, tuple(shape), op)


@dataclass
class Reply:
    """What one call produced: a value, or the reason there is none."""

    ok: bool
    value: object = None
    grads: list | None = None
    ops: list[str] = field(default_factory=list)
    entered: list[str] = field(default_factory=list)  # the submission's functions the call entered (a hint's evidence)
    # a substituted call (option ``substitute``): the calls and backward passes of the functions standing in that the
    # grader has not answered yet, each {"name", "args"[, "upstream"]}; the call is complete when there are none
    asked: list[dict] = field(default_factory=list)
    memory: Memory | None = None  # the largest tensor the call made, as the worker's record saw it (words only)
    mutated: list[bool] = field(default_factory=list)
    error: str = ""
    message: str = ""
    seconds: float = 0.0

    failure: Failure | None = None  # the runner's own finding (Reply.failed), never read from the worker's answer
    cpu_seconds: float = 0.0  # timed calls: the kernel's count of the submission's CPU time (Sandbox._cpu_seconds)
    outputs: list = field(default_factory=list)  # timed calls: each repetition's results, read from our memory
    # calls: the bytes the sandbox's processes' resident sets rose at their peaks while the call ran, summed, read by
    # the runner from the kernel (sandbox/memory.py), never from the worker's answer; None where not measured (and why)
    grown_bytes: int | None = None
    # calls made with pages=True: the bytes of the sandbox's pages the call read or wrote, wherever they were taken
    # (memory.py); None otherwise, or where grown_bytes is
    touched_bytes: int | None = None
    # calls: the more of the bytes the kernel charged to the submission's memory cgroup while the call ran (any page:
    # a process's, a tmpfs file's, a memfd's) and those it took back from it (memory.py); None where no group counts
    charged_bytes: int | None = None
    # calls: the most kernel memory (pipe and socket buffers, page tables, kernel objects) the submission's memory
    # cgroup held while the call ran, above the least it held at the call's start or before any student code ran
    # (memory.py); None where no group counts it
    kernel_bytes: int | None = None
    unmeasured: str = "not measured by this runner"
    ran_processes: bool = False  # a process ran during the call and ended before the runner could read its memory

    @classmethod
    def failed(cls, failure: Failure, message: str) -> Reply:
        """A call that failed by the runner's own finding (the one place ``failure`` is set)."""
        return cls(False, error=failure.value, message=message, failure=failure)

    @classmethod
    def hang(cls, message: str) -> Reply:
        """The student's time-out, as the sandbox itself found it."""
        return cls.failed(Failure.HUNG, message)

    @property
    def hung(self) -> bool:
        return self.failure is Failure.HUNG

    @classmethod
    def skipped_after_hang(cls, target: str) -> Reply:
        return cls.hang(f"{target} did not finish in an earlier call, so it was not run again")

    def describe(self) -> str:
        return f"{self.error}: {self.message}" if self.message else self.error


class Runner(Protocol):
    """What runs the student's code, as the checks see it. Never raises for the student's faults: a reply says."""

    load_reply: Reply | None  # None until load()
    source: str  # the submission's source, read in the trusted process, for the static integrity scan
    confinement: dict[str, str]  # which sandbox held, by mechanism (sandbox/report.py); empty where none was needed

    def load(self) -> Reply:
        """Load the submission; the reply says whether it imported."""
        ...

    def call(self, target: str, args=(), kwargs=None, *, timeout: float, pages: bool = False, **options) -> Reply:
        """Call ``target`` with plain tensors (``options``: ``grad``, ``grad_outputs``, ``init`` and ``state`` for
        MultiHeadAttention); the reply holds its value, gradients, mutation flags and fused ops seen (``pages``: and
        the pages the call touched, ``Reply.touched_bytes``, counted by the runner and never sent to the worker)."""
        ...

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
        """Call ``target`` once per entry of ``inputs``, timed from outside; ``outputs`` gives each result's
        (shape, dtype). The reply's ``seconds``, ``cpu_seconds`` and ``outputs`` are the measurement."""
        ...

    def own_seconds(self) -> float:
        """The student's own time in every request so far (each call's, as its limit counts it: the wall clock less
        the time the machine kept the student's process from a CPU), and what ``charge`` added: what the grading's
        wall-clock limits charge."""
        ...

    def charge(self, seconds: float) -> None:
        """Counts ``seconds`` of the grader's CPU time spent on the student's behalf (answering the questions its code
        asked in a substituted call) as the student's own: a student who asks costly questions spends its own time."""
        ...

    def close(self) -> None:
        """Stop everything it started; called once, by its owner."""
        ...


def reply_from(answer, elapsed: float) -> Reply:
    """A Reply from the worker's answer, trusting nothing in it but plain values of the expected kinds."""
    if not isinstance(answer, dict):
        return Reply.failed(Failure.WIRE, "the answer was not a message")
    entered = answer.get("entered", [])
    if not (
        isinstance(entered, list)
        and len(entered) <= MAX_ENTERED
        and all(isinstance(name, str) and len(name) <= 200 for name in entered)
    ):
        message = "the answer's list of functions entered was not a short list of names"
        return Reply.failed(Failure.WIRE, message)
    if not answer.get("ok"):
        error, message = str(answer.get("error", "Error"))[:100], str(answer.get("message", ""))[:2000]
        return Reply(False, error=error, message=message, entered=entered)
    ops, grads = answer.get("ops", []), answer.get("grads")
    if not (isinstance(ops, list) and all(isinstance(op, str) for op in ops)):
        return Reply.failed(Failure.WIRE, "the answer's list of ops was not a list of names")
    if grads is not None and not (isinstance(grads, list) and all(isinstance(g, torch.Tensor) for g in grads)):
        return Reply.failed(Failure.WIRE, "the answer's gradients were not a list of tensors")
    asked = answer.get("asked", [])
    if not (
        isinstance(asked, list)
        and len(asked) <= MAX_ASKED
        and all(
            isinstance(q, dict)
            and isinstance(q.get("name"), str)
            and isinstance(q.get("args"), list)
            and isinstance(q.get("upstream", []), list)
            and set(q) <= {"name", "args", "upstream"}
            for q in asked
        )
    ):
        return Reply.failed(Failure.WIRE, "the answer's questions for the functions standing in were not plain calls")
    memory = None
    if "memory" in answer:
        memory = Memory.read(answer["memory"])
        if memory is None:
            return Reply.failed(Failure.WIRE, "the answer's record of its largest tensor was not plain numbers")
    return Reply(
        True,
        memory=memory,
        value=answer.get("value"),
        grads=grads,
        ops=ops,
        entered=entered,
        asked=asked,
        # timed by our own clock: the worker cannot claim to be faster than it was
        seconds=elapsed,
    )


def mutated(sent: tuple, after: list) -> list[bool]:
    """For each argument: did the call change it? Compared here, with our own torch.equal (an in-process runner's
    arguments; a sandbox judges mutation from the shared memory it owns, client.Sandbox.call)."""
    changed = []
    for index, before in enumerate(sent):
        now = after[index] if index < len(after) else None
        if not isinstance(before, torch.Tensor):
            changed.append(False)
        else:
            same = isinstance(now, torch.Tensor) and now.shape == before.shape and now.dtype == before.dtype
            changed.append(not (same and torch.equal(now, before)))
    return changed


# every figure of a call's memory in a Reply, measured by the runner: what a rerun of the call with other answers
# (checks/substitution.py, a memory check's substituted call) takes over from the student's own call as it is
MEMORY_FIELDS = (
    "grown_bytes",
    "touched_bytes",
    "charged_bytes",
    "kernel_bytes",
    "unmeasured",
    "ran_processes",
    "memory",
)
