"""Runs the student's code in worker processes, never in this one: the client of a zygote (zygote.py).

``Sandbox`` owns a zygote (see student_side/worker.py) and one live child at a time. ``call`` sends a
request and waits for the answer within a time limit; a child that crashed, hung or exited
is killed and replaced before the next call. A target that hung once is not waited on again.
When the sandbox closes, every process the submission started is gone.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import socket
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import torch

from autograder.sandbox.arena import Arena, cpu_seconds, place
from autograder.sandbox.cgroups import Cgroups
from autograder.sandbox.cleanup import remove_tree
from autograder.sandbox.memory import Peak
from autograder.sandbox.processes import NOBODY, become_subreaper, children, kill_orphans
from autograder.sandbox.protocol import (
    Failure,
    GraderBusy,
    Reply,
    RequestRefused,
    Runner,
    busy_message,
    reply_from,
)
from autograder.sandbox.report import SandboxMissing, confinement, describe, held
from autograder.sandbox.student_side import wire
from autograder.sandbox.zygote import START_TIMEOUT, Zygote


def _student_process(worker: int) -> int:
    """The student's process: PID 1 of the sandbox, the keeper's only child (confine.py), as the kernel lists it;
    the worker itself where it confined nothing (no keeper). The timing check finds it in the submission's
    cgroup, or, where it is in none, reads its CPU clock."""
    try:
        found = Path(f"/proc/{worker}/task/{worker}/children").read_text().split()
    except OSError:
        return worker
    return int(found[0]) if len(found) == 1 else worker


class _NoAnswer(Exception):
    """The worker did not answer in time: the student's own time ran out."""


class _OutOfBudget(Exception):
    """The grading's whole time budget ran out while the worker was answering."""


# seconds to read what the worker has already sent, once the call's own time is spent (a reply's deadline counts
# from the request: a reply whose first byte comes just before the limit has only this long for the rest)
_READ_GRACE = 0.1


def _run_delay(pid: int) -> float:
    """Seconds process ``pid``'s main thread has spent ready to run but waiting for a CPU (the kernel's schedstat);
    0 where that is not known."""
    try:
        with open(f"/proc/{pid}/schedstat") as handle:
            return int(handle.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


def _same_bits(now: torch.Tensor, before: torch.Tensor) -> bool:
    """Bit for bit the same (NaN included), compared in this process with our own torch."""
    if now.numel() == 0:
        return True
    return torch.equal(now.reshape(-1).view(torch.uint8), before.contiguous().reshape(-1).view(torch.uint8))


class Sandbox(Runner):
    """The student's module, loaded in a worker process, behind a request/answer interface (protocol.py).

    Used as a context manager by whoever owns it (``grade.run_checks``): ``__enter__`` starts its worker (the
    zygote's child, forked on the first request), ``__exit__`` closes it, once."""

    def __init__(
        self,
        submission: Path,
        limits: Mapping,
        *,
        zygote: Zygote | None = None,
        device: str = "cpu",
        block_fused: bool = True,
        imports: Sequence[str] | None = None,
        deadline: float | None = None,
        measure_memory: bool = True,
    ) -> None:
        """A sandbox for ``submission`` (its worker starts on ``__enter__``; ``load()`` when needed), forked from
        ``zygote`` (a batch's, or the grading's); without one, the sandbox starts and closes a zygote of its own.

        ``limits`` is the settings' [limits] as plain values (``dataclasses.asdict(settings.limits)``, declared in
        autograder/config.py): the sandbox imports nothing of the grader's. ``imports``, the settings' [imports]
        allowed (plain names), is what the submission's code may import besides the standard library (the worker
        refuses the rest, and the sandbox cannot read it); None: whatever the library folder holds (the reference).
        ``deadline`` (time.monotonic()) is when the grading's time budget (``limits.grading_budget``) runs out: every
        request ends by then, and none starts after it."""
        self.submission = submission
        self.imports = None if imports is None else list(imports)
        self.block_fused = block_fused  # fused attention unreachable in the worker (blocking._block_fused)
        # every call's memory measured (memory.py), the worker readied for it: only where a check reads the figures
        # (grade.measures_memory); then every call alike, so that none can tell a measured call from another
        self.measure_memory = measure_memory
        self.require_sandbox = bool(limits["require_sandbox"])
        self.confinement: dict[str, str] = {}
        self.after_hang_timeout = limits["after_hang_timeout"]
        self.load_timeout = limits["load_timeout"]
        self.busy_factor = limits["busy_factor"]
        self.reply_bytes = limits["reply_mb"] << 20
        self.deadline = deadline
        self.budget = limits["grading_budget"]
        # what the worker's child applies to itself (confine.py): plain values, across the socket
        self.limits = {
            "memory_bytes": limits["memory_mb"] << 20,
            "output_bytes": limits["output_kb"] << 10,
            "cuda": device == "cuda",
            "processes": limits["processes"],
            "tmp_bytes": limits["tmp_mb"] << 20,
            "tmp_inodes": limits["tmp_inodes"],
        }
        self.hung: set[str] = set()
        self.restarts = 0
        self.load_reply: Reply | None = None
        self._child: tuple[int, socket.socket] | None = None
        self._measured: int | None = None  # the student's process in the current child (_student_process)
        self._own = 0.0  # the student's own time in every request so far, as each request's limit counts it (_answer)
        self._whole = False  # whether its CPU time is read from the submission's cgroup
        self._peak = Peak()  # the sandbox's peak memory, reset and read around every call (memory.py)
        self._zygote = zygote
        self._own_zygote: Zygote | None = None
        self._client: socket.socket | None = None

    def __enter__(self) -> Sandbox:
        become_subreaper()
        self.folder = Path(tempfile.mkdtemp(prefix="sdpa-grade-"))
        self.scratch = self.folder / "scratch"
        self.scratch.mkdir()
        shutil.copy(self.submission, self.scratch / "attention.py")
        # our children now (a shared zygote among them) are not the submission's: never orphans to kill
        self._before = frozenset(children(os.getpid()))
        if self._zygote is None:
            self._zygote = self._own_zygote = Zygote()
        if self._zygote.drops_privileges:  # the worker, as nobody, may enter and write its scratch folder only
            os.chmod(self.folder, 0o711)
            os.chown(self.scratch, NOBODY, NOBODY)
            os.chmod(self.scratch / "attention.py", 0o644)
        owner = NOBODY if self._zygote.drops_privileges else None
        self.cgroups = Cgroups(
            self.folder.name, memory_bytes=self.limits["memory_bytes"], processes=self.limits["processes"], owner=owner
        )
        self._peak.stat = self.cgroups.memory_stat  # the pages the kernel charges the submission (memory.py)
        self._peak.kernel = self.cgroups.kernel_memory  # the kernel memory charged to the submission (memory.py)
        self._client = self._zygote.client()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def zygote(self) -> Zygote:
        """The zygote its workers are forked from (a batch's, or its own), for another sandbox of the same grading."""
        return self._zygote

    @property
    def source(self) -> str:
        """The submission's source, read in this (the trusted) process."""
        return self.submission.read_text(encoding="utf-8")

    def load(self) -> Reply:
        """Load the submission in a fresh child; the reply says whether it imported."""
        self.load_reply = self._request({"op": "load", "path": "attention.py"}, "load", self.load_timeout)
        return self.load_reply

    def _refusal(self, target: str) -> Reply | None:
        """Why ``target`` is not called at all: the submission did not load, or ``target`` hung before."""
        if self.load_reply is None or not self.load_reply.ok:
            return Reply.failed(Failure.NOT_LOADED, "the submission did not load")
        if target in self.hung:
            return Reply.skipped_after_hang(target)
        if self._out_of_budget():
            return self._budget_reply()
        return None

    def _out_of_budget(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline

    def own_seconds(self) -> float:
        """The student's own time in this sandbox's requests so far: each request's, as its limit counts it, and the
        grader's time answering the student's questions (``charge``)."""
        return self._own

    def charge(self, seconds: float) -> None:
        """Counts ``seconds`` of the grader's CPU time spent on the student's behalf (the reference's answers to its
        questions in a substituted call) as the student's own."""
        self._own += seconds

    def _budget_reply(self) -> Reply:
        """The student's time-out once the whole grading's budget has run out, where the student's own time took at
        least a ``busy_factor``-th of it; else the machine's load spent it (GraderBusy)."""
        if self._own < self.budget / self.busy_factor:
            raise GraderBusy(busy_message("the grading", self.budget, self._own))
        message = f"the grading's time budget of {self.budget:g} s ran out (its calls together took too long)"
        return Reply.hang(message)

    def call(self, target: str, args=(), kwargs=None, *, timeout: float, pages: bool = False, **options) -> Reply:
        """Call ``target`` of the student's module with plain tensors; never raises for the student's faults.
        ``pages``: count the pages the call touched too (``Reply.touched_bytes``), on this side only."""
        refused = self._refusal(target)
        if refused is not None:
            return refused
        if self.hung:
            timeout = min(timeout, self.after_hang_timeout)
        # tensor arguments live in memory we own: what the call did to them is read here, afterwards
        arena = Arena()
        # a substituted call's table of answers (checks/substitution.py) lives there too
        substitute = options.pop("substitute", None)
        (args, kwargs, substitute), placed = place(arena, (list(args), kwargs or {}, substitute))
        if substitute is not None:
            options["substitute"] = substitute
        request = {"op": "call", "target": target, "args": args, "kwargs": kwargs, "arena": arena.size, **options}
        arena.open()
        try:
            for spec, tensor in placed:
                arena.view(spec).copy_(tensor)
            reply = self._request(request, target, timeout, arena, pages=pages)
            if reply.ok:
                changed = {id(spec): not _same_bits(arena.view(spec), tensor) for spec, tensor in placed}
                reply.mutated = [changed.get(id(arg), False) for arg in args]
        finally:
            arena.close()
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
        """Call ``target`` once per entry of ``inputs`` and time it all from here (see docs/performance.md).

        Each repetition's inputs are written into our shared memory only after both clocks are
        read; its results (``outputs``: one (shape, dtype) per returned tensor) must be there
        when the worker answers. The reply's ``seconds`` is our wall clock, ``cpu_seconds`` the
        kernel's count of the submission's CPU time (``_cpu_seconds``), ``outputs`` what it left.
        """
        refused = self._refusal(target)
        if refused is not None:
            return refused
        if self.hung:
            timeout = min(timeout, self.after_hang_timeout)
        arena = Arena()
        slots = [[arena.reserve(a.shape, a.dtype) for a in rep] for rep in inputs]
        results = [[arena.reserve(shape, dtype) for shape, dtype in outputs] for _ in inputs]
        request = {
            "op": "time",
            "target": target,
            "inputs": slots,
            "outputs": results,
            "arena": arena.size,
            "device": device,
            "kwargs": kwargs or {},
        }
        arena.open()
        try:
            reply = self._request(request, target, timeout, arena, inputs=(slots, inputs))
            if reply.ok:
                reply.outputs = [[arena.view(spec).clone() for spec in rep] for rep in results]
        finally:
            arena.close()
        return reply

    def _request(
        self, request: dict, target: str, timeout: float, arena: Arena | None = None, inputs=None, pages: bool = False
    ) -> Reply:
        if self._child is None:
            self._spawn()
            if request["op"] != "load" and self.load_reply is not None:
                reloaded = self._exchange({"op": "load", "path": "attention.py"}, self.load_timeout)
                if not reloaded.ok:
                    return reloaded
        reply = self._exchange(request, timeout, arena, inputs, pages)
        if reply.hung:
            self.hung.add(target)
        return reply

    def _exchange(
        self, request: dict, timeout: float, arena: Arena | None = None, inputs=None, pages: bool = False
    ) -> Reply:
        """One request and its answer, all of it within ``timeout`` (a timed request: each of its two answers)."""
        pid, conn = self._child
        measured = self.measure_memory and request["op"] == "call"  # every call alike: none measured otherwise
        if measured:
            self._peak.start()
        started = time.perf_counter()
        clock = self._clock()
        cpu = 0.0
        try:
            try:
                wire.send(conn, request, self._by(clock[0] + timeout))
            except wire.WireError as error:  # our own request: nothing was written (wire.bounded)
                raise RequestRefused(f"the grader's {request['op']} request could not be sent: {error}") from None
            if request.get("arena"):
                arena.lend(conn)
            answer = self._answer(conn, timeout, clock)
            if inputs is not None and isinstance(answer, dict) and answer.get("ok") and answer.get("ready") is not True:
                raise wire.WireError("the worker answered a timed request without getting ready for it")
            if inputs is not None and isinstance(answer, dict) and answer.get("ok"):
                # timing: our clocks first, then the inputs, then "go"; nothing could be computed earlier
                cpu, started = self._cpu_seconds(), time.perf_counter()
                for rep_slots, rep in zip(*inputs):
                    for spec, tensor in zip(rep_slots, rep):
                        arena.view(spec).copy_(tensor)
                clock = self._clock()
                wire.send(conn, {"op": "go"}, self._by(clock[0] + timeout))
                answer = self._answer(conn, timeout, clock)
                cpu = self._cpu_seconds() - cpu
        except _OutOfBudget:
            self._kill_child()
            return self._budget_reply()
        except _NoAnswer:
            self._kill_child()
            return Reply.hang(f"no answer within {timeout:g} s (infinite loop?)")
        except TimeoutError:  # socket.timeout: the whole answer missed its deadline
            self._kill_child()
            if self._out_of_budget():
                return self._budget_reply()
            message = f"no complete answer within {timeout:g} s (a reply too slow)"
            return Reply.hang(message)
        except GraderBusy:
            self._kill_child()
            raise
        except (EOFError, ConnectionError, ProcessLookupError):
            self._kill_child()
            reason = "the worker process died during the call (a crash, a segfault, os._exit or too much memory)"
            return Reply.failed(Failure.WORKER_DIED, reason)
        except wire.WireError as error:
            self._kill_child()
            return Reply.failed(Failure.WIRE, f"the answer could not be read: {error}")
        except RequestRefused:  # our own request, refused before anything was written: the child is in step
            raise
        except BaseException:  # anything else mid-request (a check's own limit, pytest-timeout's; Ctrl-C): the answer
            # may still come, and the next request would read it as its own, so this child goes
            self._kill_child()
            raise
        if isinstance(answer, dict) and answer.get("error") == "UnreadableRequest":
            # the child stops after that answer (serving._serve): the next call starts a fresh one. The worker's word
            # decides nothing but this restart: the call stays the student's failed call (Reply below)
            self._kill_child()
        reply = reply_from(answer, time.perf_counter() - started)
        reply.cpu_seconds = cpu
        if measured:
            taken = self._peak.taken(pages)
            reply.grown_bytes = None if taken is None else taken.grown
            reply.touched_bytes = None if taken is None else taken.touched
            reply.charged_bytes = None if taken is None else taken.charged
            reply.kernel_bytes = None if taken is None else taken.kernel
            reply.ran_processes = taken is not None and taken.ended
            reply.unmeasured = self._peak.why or ("" if taken is not None else "the student's process was gone")
        return reply

    def _cpu_seconds(self) -> float:
        """The kernel's count of the submission's CPU time: its cgroup's (every process it started), or, where
        the student's process is in no such group, the process clock of that process alone."""
        return self.cgroups.cpu_seconds() if self._whole else cpu_seconds(self._measured)

    def _clock(self) -> tuple[float, float, float]:
        """Where a request's clocks stand as it is sent: the wall clock, the student's process's run delay and the
        submission's CPU time. Its answer's deadline counts from here."""
        pid = self._measured if self._child is not None else None
        return time.monotonic(), _run_delay(pid) if pid else 0.0, self._own_cpu()

    def _by(self, deadline: float) -> float:
        """``deadline`` (time.monotonic()), or the grading's, if that comes first."""
        return deadline if self.deadline is None else min(deadline, self.deadline)

    def _answer(self, conn: socket.socket, timeout: float, clock: tuple[float, float, float]):
        """The worker's whole answer to the request sent at ``clock`` (``_clock()``), once it comes within
        ``timeout`` seconds of the student's own time, counted from the request.

        The student's own time is what the wall clock gave its process, less the time the kernel kept it waiting
        for a CPU (schedstat's run delay: other processes' load), or, if more, the CPU time of its whole group.
        Only when that runs out is the call the student's timeout; a call that the machine's load stretches past
        ``limits.busy_factor`` times its limit raises GraderBusy. The whole answer, not only its first byte, must
        arrive within the limit (and ``_READ_GRACE`` to read what was sent by then): a worker that answers late
        and trickles its bytes misses that deadline as a silent one does. Nothing waits past the grading's budget
        (``deadline``): _OutOfBudget."""
        pid = self._measured if self._child is not None else None
        started, delayed, cpu = clock

        def own_time() -> tuple[float, float]:
            wall = time.monotonic() - started
            own = wall - ((_run_delay(pid) - delayed) if pid else 0.0)
            return wall, max(own, self._own_cpu() - cpu)

        try:
            return self._answer_within(conn, timeout, own_time)
        finally:  # however it ended (answered, the student's time-out, the machine's): the student's time it took
            self._own += own_time()[1]

    def _answer_within(self, conn: socket.socket, timeout: float, own_time) -> object:
        wait = timeout
        while True:
            if self.deadline is not None:
                wait = min(wait, max(self.deadline - time.monotonic(), 0.0))
            ready, _, _ = select.select([conn], [], [], wait)
            if ready:
                break
            if self._out_of_budget():
                raise _OutOfBudget
            wall, own = own_time()
            if own >= timeout:
                raise _NoAnswer
            if wall >= self.busy_factor * timeout:
                raise GraderBusy(
                    f"a call had {own:.1f} s of the student's own time in {wall:.0f} s by the clock "
                    f"(limit {timeout:g} s): the machine is too busy to grade fairly"
                )
            wait = max(timeout - own, 0.05)  # the soonest the student's time could run out
        _, own = own_time()
        return wire.receive(conn, self.reply_bytes, self._by(time.monotonic() + max(timeout - own, _READ_GRACE)))

    def _own_cpu(self) -> float:
        """The submission's CPU time so far (its cgroup's, else its process's); 0 before it has a child."""
        if self._child is None or self._measured is None:
            return 0.0
        try:
            return self._cpu_seconds()
        except (OSError, ValueError):
            return 0.0

    def _spawn(self) -> None:
        self._zygote.wait_ready()
        ours, theirs = socket.socketpair()
        paths = {**self._zygote.paths(bool(self.limits["cuda"]), self.imports), "cgroups": self.cgroups.procs}
        spec = {"scratch": str(self.scratch), "limits": self.limits, "block_fused": self.block_fused, **paths}
        spec["measured"] = self.measure_memory
        spec["seccomp"] = self._zygote.seccomp
        spec = json.dumps({**spec, "imports": self.imports}).encode()
        socket.send_fds(self._client, [b"S" + spec], [theirs.fileno()])
        theirs.close()
        self._client.settimeout(START_TIMEOUT)
        answer = self._client.recv(8)
        if len(answer) != 8:
            raise RuntimeError("the worker's zygote exited")
        self._child = (int.from_bytes(answer, "big"), ours)
        self.restarts += 1
        self.confinement = confinement(ours, self.load_timeout)  # sent before any student code ran
        self._measured = _student_process(self._child[0])
        if self.measure_memory:
            self._peak.probe(self._measured)  # before any student code runs
        self._whole = self.cgroups.counts(self._measured)  # one clock for this child's life, chosen here
        if not self.cgroups.procs or not self.confinement.get("cgroups", "missing").startswith("missing"):
            self.confinement["cgroups"] = self.cgroups.describe()  # which groups: the grader made them
        if self.require_sandbox and not held(self.confinement):
            raise SandboxMissing(describe(self.confinement))

    def _kill_child(self) -> None:
        if self._child is None:
            return
        pid, conn = self._child
        conn.close()
        for target in (-pid, pid):
            try:
                os.kill(target, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self._child = None
        # and everything the kernel counts in the submission's groups (helpers in sessions of their own, where
        # namespaces were missing): the next child starts alone, and nothing charges its CPU time but itself
        self.cgroups.kill()

    def close(self) -> None:
        """Kill the child (and our zygote, if we own one) and anything they left behind; delete the scratch folder."""
        self._kill_child()
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._own_zygote is not None:
            self._own_zygote.close()
            self._own_zygote = None
        kill_orphans(keep=self._before)
        self.cgroups.close()
        remove_tree(self.folder)  # in a weaker sandbox the student could write there: trust nothing in it
