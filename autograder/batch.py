"""``sdpa-grade --batch``: grade a class, several submissions at once, resumable.

Each student is graded in a process of its own, forked from this one (torch and the checks
are already imported, so a start costs milliseconds), with its own worker sandbox: one
broken submission cannot stop or change another's grade. A result is written atomically the
moment it is known, so an interrupted batch resumes where it stopped (``--force`` regrades).
"""

from __future__ import annotations

import csv
import json
import os
import secrets
import signal
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from autograder.class_results import MISSING, ClassResults, class_results, describe, reason
from autograder.config import Settings
from autograder.render.inert import inert
from autograder.report import grader_failure
from autograder.roster import result_names, shown
from autograder.sandbox import cgroups
from autograder.sandbox.processes import become_subreaper, die_with_parent, kill_orphans
from autograder.sandbox.runner import Zygote
from autograder.shard import select

# Left in every folder a batch writes (results, feedback pages): a later batch over the folder above
# takes it for the grader's output, not for a student.
MARKER = ".sdpa-grade-output"


@dataclass(frozen=True)
class BatchOptions:
    """What ``sdpa-grade --batch`` was asked to do, typed; built once from the command line (cli.py)."""

    folder: Path
    jobs: int = 2  # submissions graded at once
    device: str = "cpu"  # where the timing check runs
    json_dir: Path | None = None  # one result per student (default: DIR-grades beside DIR)
    csv: Path | None = None
    report: Path | None = None  # the class dashboard, with a folder of feedback pages beside it
    show: str | None = None  # a student whose checks and feedback are printed too
    force: bool = False  # grade again students already graded
    shard: tuple[int, int] | None = None  # (K, N): grade only shard K of N
    summary_only: bool = False  # grade nothing: summarise the results already written (the merge of the shards)
    partial: bool = False  # with --summary-only: summarise and write the CSV with students missing


def mark_output(folder: Path) -> None:
    """Make ``folder`` and leave the marker that keeps later batches from grading it as a student."""
    folder.mkdir(parents=True, exist_ok=True)
    marker = folder / MARKER
    if not marker.exists():
        marker.write_text("Written by sdpa-grade; sdpa-grade --batch never takes this folder for a student's.\n")


def students(folder: Path) -> dict[str, Path]:
    """Student name -> submission: every subfolder, and every .py or .ipynb file at the top.

    A file whose stem is also a folder's name (``x.py`` beside ``x/``) keeps its whole name, so
    that neither is dropped. Symbolic links are kept here and refused when read (submission.py).
    Folders that an earlier batch wrote (they hold ``MARKER``) are not students.
    """
    entries = [
        e
        for e in sorted(folder.iterdir())
        if not e.name.startswith(".") and not (e.is_dir() and (e / MARKER).is_file())
    ]
    folders = {e.name for e in entries if e.is_dir()}
    found = {}
    for entry in entries:
        if entry.is_dir():
            found[entry.name] = entry
        elif entry.suffix in (".py", ".ipynb"):
            found[entry.name if entry.stem in folders or entry.stem in found else entry.stem] = entry
    return found


def _write_atomically(path: Path, text: str) -> None:
    # a name no other grader can have: shards on other machines may share the folder (and a PID)
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


def _grade_in_child(
    submission: Path, target: Path, settings: Settings, device: str, zygote: Zygote, batch: int
) -> None:
    """In a forked child: grade, write the result, exit. Never returns."""
    die_with_parent(batch)  # the batch killed, by SIGKILL too: no grading of it runs on
    code = 0
    try:
        from autograder.grade import grade

        grading = grade(submission, settings, device=device, zygote=zygote)
        result = grading.result
        code = 3 if grading.grader_error else 0
    except BaseException:  # noqa: BLE001 - the grader's own fault, recorded for the instructor
        result = grader_failure(traceback.format_exc())
        code = 3
    try:
        _write_atomically(target, json.dumps(result, indent=2))
    finally:
        os._exit(code)


def run_batch(args: BatchOptions, settings: Settings) -> int:
    folder = args.folder
    if not folder.is_dir():
        print(f"sdpa-grade: --batch {folder} is not a folder", file=sys.stderr)
        return 2
    if args.jobs < 1:
        print(f"sdpa-grade: Invalid --jobs {args.jobs}: expected at least 1", file=sys.stderr)
        return 2
    if args.partial and not args.summary_only:
        print(
            "sdpa-grade: --partial goes with --summary-only (a merge that may have students missing)", file=sys.stderr
        )
        return 2
    roster = select(students(folder), args.shard)
    if args.show is not None and args.show not in roster:
        print(
            f"sdpa-grade: Invalid --show {shown(args.show)}: no such student in {folder}"
            f" (have: {', '.join(shown(name) for name in roster)})",
            file=sys.stderr,
        )
        return 2
    out = args.json_dir or folder.parent / f"{folder.name}-grades"
    mark_output(out)
    files = result_names(list(roster))
    targets = {name: out / files[name] for name in roster}
    for name in roster:
        if files[name] != f"{name}.json":
            print(f"note: the result of '{shown(name)}' is in {files[name]}", file=sys.stderr)
    if args.summary_only:
        return _summarise_only(roster, targets, args)
    # a result that was the grader's own failure is graded again
    todo = [
        name for name in roster if args.force or not targets[name].is_file() or _read(targets[name]).get("grader_error")
    ]
    shard = f"shard {args.shard[0]}/{args.shard[1]}: " if args.shard else ""
    print(
        f"{shard}{len(roster)} students, {len(roster) - len(todo)} already graded, {len(todo)} to grade",
        file=sys.stderr,
    )

    try:
        failures = _grade_all(todo, roster, targets, settings, args)
        again = [name for name in todo if _read(targets[name]).get("grader_error")]
        if again:  # the grader's own failure (a worker that did not start, a zygote that died): once more, afresh
            print(f"grading {len(again)} submission(s) again after a grader error", file=sys.stderr)
            failures = _grade_all(again, roster, targets, settings, args)
    except KeyboardInterrupt:
        saved = sum(1 for name in roster if targets[name].is_file() and not _read(targets[name]).get("grader_error"))
        print(
            f"\nsdpa-grade: interrupted: {saved} of {len(roster)} results are saved in {out}; run the same command"
            " again to grade the rest",
            file=sys.stderr,
        )
        return 130
    results = {name: _read(targets[name]) for name in roster}
    for mode in sorted({str(r.get("extra_data", {}).get("sandbox")) for r in results.values()} - {"None"}):
        print(f"sdpa-grade: {mode}", file=sys.stderr)
    stats = class_results(results)
    if args.csv:
        _write_csv(args.csv, stats)
    if args.show is not None:
        from autograder.report import table

        print(f"{shown(args.show)}'s feedback:\n{table(results[args.show])}\n")
    print(inert(summary(stats)))
    if args.report:
        from autograder.render.dashboard import write_report

        pages = write_report(args.report, stats)
        mark_output(pages)
        print(f"class dashboard: {args.report} (feedback pages in {pages})", file=sys.stderr)
    if failures:
        print(
            f"sdpa-grade: the grader failed on {failures} submission(s); see 'grader_error' in their results",
            file=sys.stderr,
        )
        return 3
    return 0


def _summarise_only(roster: dict, targets: dict, args: BatchOptions) -> int:
    """--summary-only: summary and CSV of the results already written, by any machine (the merge of the shards).

    A merge that is not whole says so and writes nothing: a CSV with students left out would be
    uploaded as the class's grades. It names every student with no result yet (what to grade
    next) and exits 1; ``--partial`` asks for the summary and the CSV of what there is all the
    same, the missing students' rows marked ``missing``.
    """
    missing = [name for name in roster if not targets[name].is_file()]
    if missing:
        print(
            f"sdpa-grade: {len(missing)} of {len(roster)} students have no result yet: "
            f"{', '.join(shown(name) for name in missing)}",
            file=sys.stderr,
        )
    if missing and not args.partial:
        wrote = f"no CSV written ({args.csv}); " if args.csv else ""
        print(
            f"sdpa-grade: {wrote}grade them (run their shard again), then merge; --partial merges what there is",
            file=sys.stderr,
        )
        return 1
    stats = class_results({name: None if name in missing else _read(targets[name]) for name in roster})
    if args.csv:
        _write_csv(args.csv, stats)
    print(inert(summary(stats)))
    return 1 if missing else 0


def _grade_all(todo: list[str], roster: dict, targets: dict, settings: Settings, args: BatchOptions) -> int:
    """Grade ``todo``, ``args.jobs`` at a time, sharing one worker zygote; return how many failed the grader."""
    if not todo:
        return 0
    from autograder.grade import warm_up

    become_subreaper()  # what a submission leaves running comes back to us, and is killed below
    zygote = Zygote()
    warm_up(settings)  # while the zygote imports torch: every child starts warm
    zygote.wait_ready()
    running: dict[int, str] = {}
    owners: dict[int, str] = {}  # each grading's cgroups owner (cgroups.owner), to kill what it leaves
    failures = done = 0
    started = time.perf_counter()
    queue = list(todo)
    batch = os.getpid()
    interrupted = _Interrupts()
    try:
        while queue or running:
            interrupted.check()
            while queue and len(running) < args.jobs:
                if zygote.process.poll() is not None:  # it died: the next students get a new one
                    zygote.close()
                    zygote = Zygote()
                    zygote.wait_ready()
                name = queue.pop(0)
                pid = os.fork()
                if pid == 0:
                    _grade_in_child(roster[name], targets[name], settings, args.device, zygote, batch)
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
        zygote.close()
        kill_orphans()
    return failures


class _Interrupts:
    """Ctrl-C as KeyboardInterrupt, never lost. Python raises it wherever the signal lands, and one that lands in
    an at-fork callback (logging's, around every ``os.fork``) is only printed, "Exception ignored": the batch
    then graded on to the end and exited 0. The handler also notes it, and ``check`` raises it again."""

    def __init__(self) -> None:
        self.seen = False
        self._previous = signal.signal(signal.SIGINT, self._handle)
        self._unraisable = sys.unraisablehook
        sys.unraisablehook = self._ignored

    def _handle(self, signum, frame) -> None:
        self.seen = True
        raise KeyboardInterrupt

    def _ignored(self, unraisable) -> None:
        """The interrupt is raised again by ``check``: no "Exception ignored" traceback for it on the way."""
        if not isinstance(unraisable.exc_value, KeyboardInterrupt):
            self._unraisable(unraisable)

    def check(self) -> None:
        if self.seen:
            raise KeyboardInterrupt

    def restore(self) -> None:
        signal.signal(signal.SIGINT, self._previous)
        sys.unraisablehook = self._unraisable


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


def _read(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return grader_failure(f"no readable result in {path}")


def _progress(done: int, total: int, name: str, target: Path, started: float) -> None:
    result = _read(target)
    width = 30
    filled = int(width * done / max(total, 1))
    bar = "#" * filled + "-" * (width - filled)
    print(
        f"[{bar}] {done}/{total} {time.perf_counter() - started:5.0f}s  {shown(name)}: "
        f"{result.get('score', 0):g}/{result.get('max_score', 0):g}",
        file=sys.stderr,
    )


def _write_csv(path: Path, stats: ClassResults) -> None:
    """The grades, one row per student (no result yet: a row that says missing), written whole or not at all."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(temporary, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student", "score", "max_score", "status"])
        for student in stats.students:
            if student.result is None:
                writer.writerow([_cell(student.shown), "", "", MISSING])
                continue
            writer.writerow(
                [
                    _cell(student.shown),
                    student.result.get("score", 0),
                    student.result.get("max_score", 0),
                    student.status,
                ]
            )
    os.replace(temporary, path)


def _cell(text: str) -> str:
    """A CSV cell a spreadsheet will not run as a formula (OWASP's advice: a leading quote), with no control
    characters."""
    quoted = f"'{text}" if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text
    return inert(quoted, keep_newlines=False)


# the summary's words for a student's own flags (the dashboard writes the flags' kinds)
OWN_FLAGS = {"ungradable": "ungradable", "grader error": "grader_error"}


def summary(stats: ClassResults) -> str:
    """Per check, how many passed; per named mistake, how many submissions showed it; what to review; grading times."""
    lines = [f"Class summary: {len(stats.present)} submissions", "", f"{'check':<62} passed"]
    lines += [f"{name:<62} {stats.passed[name]}/{count}" for name, count in stats.seen.items()]
    lines += ["", "Named mistakes (submissions showing each):"]
    lines += [f"{count:4d}  {describe(key)}" for key, count in stats.mistakes.most_common()] or ["   none"]
    lines += ["", *_review_and_times(stats)]
    return "\n".join(lines)


def _review_and_times(stats: ClassResults) -> list[str]:
    """Submissions to look at (integrity flags with their reasons, ungradable, grader errors) and grading times."""
    review = []
    for student in stats.present:
        reasons = [f"{flag.check}: {reason(flag.kind)}" for flag in student.flags if flag.kind not in OWN_FLAGS]
        reasons += [word for kind, word in OWN_FLAGS.items() if any(flag.kind == kind for flag in student.flags)]
        if reasons:
            review.append(f"   {student.name}: {'; '.join(reasons)}")
    seconds = sorted(student.seconds for student in stats.present)
    times = f"median {seconds[len(seconds) // 2]:.1f} s, slowest {seconds[-1]:.1f} s" if seconds else "none"
    header = "Flagged for review (integrity flags, ungradable, grader errors; see each student's feedback):"
    return [header, *(review or ["   none"]), "", f"Grading time per submission: {times}"]
