"""The batch's pool: each student graded in a process of its own, forked from this one (torch and the checks are
already imported, so a start costs milliseconds), ``--jobs`` at a time, all sharing one worker zygote; a result
written atomically the moment it is known; the gradings under way stopped, unwritten, on Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import traceback
from pathlib import Path

from autograder import provenance
from autograder.atomic import write_atomically
from autograder.config import Settings
from autograder.interrupts import Interrupts
from autograder.read.handed_in import HandedIn
from autograder.record import Result
from autograder.render.inert import shown
from autograder.report import grader_failure, load
from autograder.sandbox import cgroups
from autograder.sandbox.processes import become_subreaper, die_with_parent, kill_orphans
from autograder.sandbox.zygote import Zygote


def grade_in_child(
    name: str,
    submission: HandedIn,
    target: Path,
    settings: Settings,
    device: str,
    zygote: Zygote,
    batch: int,
) -> None:
    """In a forked child: grade, write the result, exit. Never returns.

    Ctrl-C reaches the child too (the terminal signals the whole group): a grading it cut short is not a result,
    so nothing is written and the student's earlier result, if any, stays as it was."""
    die_with_parent(batch)  # the batch killed, by SIGKILL too: no grading of it runs on
    code = 0
    interrupts = Interrupts()
    try:
        from autograder.grade import grade
        from autograder.read.handed_in import TimeFrom

        time = TimeFrom(name, submission.submitted_at, submission.time_problem, from_gate=True)
        grading = grade(submission, settings, device=device, zygote=zygote, time=time)
        result = grading.result
        code = 3 if grading.grader_error else 0
    except BaseException:  # noqa: BLE001 - the grader's own fault, recorded for the instructor
        result = grader_failure(traceback.format_exc(), provenance.failed(settings, device))
        code = 3
    try:
        # the student's name as the batch names them: a result file named with a hash (roster.result_names) is
        # still shown by name where only the folder is read (sdpa-grade --diff OLD NEW)
        result["extra_data"] = {**Result.of(result).extra_data, "student": name}
        if not interrupts.seen:
            write_atomically(target, json.dumps(result, indent=2))
    finally:
        os._exit(130 if interrupts.seen else code)


def grade_all(
    todo: list[str],
    roster: dict,
    targets: dict,
    settings: Settings,
    jobs: int,
    device: str,
    given: Zygote | None = None,
) -> int:
    """Grade ``todo``, ``jobs`` at a time (the timing check on ``device``), sharing one worker zygote (``given``: the
    one ``sdpa-grade batch`` forked at its start, its caller's to close; else one started here); return how many
    failed the grader."""
    if not todo:
        return 0
    from autograder.grade import warm_up

    become_subreaper()  # what a submission leaves running comes back to us, and is killed below
    zygote = given if given is not None and given.process.poll() is None else Zygote()
    warm_up(settings)  # while the zygote imports torch: every child starts warm
    zygote.wait_ready()
    running: dict[int, str] = {}
    owners: dict[int, str] = {}  # each grading's cgroups owner (cgroups.owner), to kill what it leaves
    failures = done = 0
    started = time.perf_counter()
    queue = list(todo)
    batch = os.getpid()
    interrupted = Interrupts()
    try:
        while queue or running:
            interrupted.check()
            while queue and len(running) < jobs:
                if zygote.process.poll() is not None:  # it died: the next students get a new one
                    zygote.close()
                    zygote = Zygote()
                    zygote.wait_ready()
                name = queue.pop(0)
                pid = os.fork()
                if pid == 0:
                    grade_in_child(name, roster[name], targets[name], settings, device, zygote, batch)
                running[pid], owners[pid] = name, cgroups.owner(pid)
                interrupted.check()
            pid, status = os.wait()
            name = running.pop(pid, None)
            if name is None:
                continue  # an orphan re-parented to us
            cgroups.release(owners.pop(pid))  # however the grading ended, what ran in its groups is killed
            done += 1
            failures += os.waitstatus_to_exitcode(status) != 0
            _progress(done, len(todo), name, targets[name], started)
            kill_orphans(keep=frozenset({zygote.process.pid, *running}))
    finally:
        interrupted.restore()
        _stop(running, owners)  # interrupted (Ctrl-C): the gradings under way end here, unwritten, and resume later
        if zygote is not given:
            zygote.close()
        alive = given is not None and given.process.poll() is None  # the caller's, closed by it
        kill_orphans(keep=frozenset({given.process.pid}) if alive else frozenset())
    return failures


def _stop(running: dict[int, str], owners: dict[int, str]) -> None:
    """SIGKILL the gradings still running, wait for them, and kill what ran in their groups."""
    for pid in running:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for pid in running:
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
        cgroups.release(owners[pid])
    running.clear()


def _progress(done: int, total: int, name: str, target: Path, started: float) -> None:
    result = Result.of(load(target))
    width = 30
    filled = int(width * done / max(total, 1))
    bar = "#" * filled + "-" * (width - filled)
    print(
        f"[{bar}] {done}/{total} {time.perf_counter() - started:5.0f}s  {shown(name)}: "
        f"{result.score:g}/{result.max_score:g}",
        file=sys.stderr,
    )
