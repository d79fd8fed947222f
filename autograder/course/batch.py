"""``sdpa-grade --batch``: grade a class, several submissions at once, resumable.

Each student is graded in a process of its own, forked from this one (torch and the checks
are already imported, so a start costs milliseconds), with its own worker sandbox: one
broken submission cannot stop or change another's grade. A result is written atomically the
moment it is known, so an interrupted batch resumes where it stopped (``--force`` regrades).
"""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import sys
import time
import traceback
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from autograder import provenance
from autograder.assignment.deadline import DeadlineError, apply, read_times
from autograder.atomic import write_atomically
from autograder.config import Settings
from autograder.course.class_results import ClassResults, class_results
from autograder.course.roster import result_names
from autograder.course.shard import select
from autograder.interrupts import Interrupts
from autograder.read.handed_in import MARKER, HandedIn, collected_by_nbgrader, listing, take, with_time
from autograder.record import Result
from autograder.render.inert import csv_cell, inert, shown
from autograder.render.terminal import summary
from autograder.report import grader_failure, load, stamp, unstamp
from autograder.sandbox import cgroups
from autograder.sandbox.processes import become_subreaper, die_with_parent, kill_orphans
from autograder.sandbox.zygote import Zygote
from autograder.status import MISSING


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
    diff: Path | None = None  # an earlier results folder: print (and --report shows) what changed since
    times: Path | None = None  # a CSV of student,submitted_at for the [deadline] policy (else nbgrader's timestamps)
    csv_format: str = "plain"  # plain, canvas or moodle
    roster: Path | None = None  # the LMS's own gradebook export, for canvas and moodle
    assignment: str = "sdpa"  # the assignment's name in the LMS
    similarity: bool = False  # also compare every pair of students: similarity.csv, for review (never a deduction)


def mark_output(folder: Path) -> None:
    """Make ``folder`` and leave the marker that keeps later batches from grading it as a student."""
    folder.mkdir(parents=True, exist_ok=True)
    marker = folder / MARKER
    if not marker.exists():
        marker.write_text("Written by sdpa-grade; sdpa-grade --batch never takes this folder for a student's.\n")


def students(folder: Path, settings: Settings | None = None) -> dict[str, Path | tuple[Path, ...]]:
    """Student name -> submission: the gate's listing of the class folder (handed_in.listing), under ``settings``'
    [limits] (the defaults' without)."""
    from autograder.config import load_settings

    return listing(folder, (settings or load_settings(environ={})).limits).students


def _grade_in_child(
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

        grading = grade(submission, settings, device=device, zygote=zygote)
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
    # before any grading: a roster that cannot be used is a bad option, not a failure once the class is graded
    if args.csv_format != "plain" and args.roster is not None:
        from autograder.course.gradebook import RosterError, check_roster

        try:
            check_roster(args.roster, args.csv_format)
        except RosterError as error:
            print(f"sdpa-grade: {error}; nothing graded", file=sys.stderr)
            return 2
    entries = listing(folder, settings.limits)
    everyone = entries.students
    roster = select(everyone, args.shard)
    if args.show is not None and args.show not in roster:
        print(
            f"sdpa-grade: Invalid --show {shown(args.show)}: no such student in {folder}"
            f" (have: {', '.join(shown(name) for name in roster)})",
            file=sys.stderr,
        )
        return 2
    out = args.json_dir or folder.parent / f"{folder.name}-grades"
    if args.diff is not None:  # before any grading: an OLD folder that cannot be compared is a bad option
        from autograder.course.diff import Unusable, read_folder

        try:
            read_folder(args.diff)
        except Unusable as error:
            print(f"sdpa-grade: --diff: {error}", file=sys.stderr)
            return 2
        if args.diff.resolve() == out.resolve():
            print(f"sdpa-grade: --diff {args.diff} is this batch's own results folder: regrade into a new"
                  " --json-dir and compare the released one with it", file=sys.stderr)  # fmt: skip
            return 2
    mark_output(out)
    files = result_names(list(roster))
    targets = {name: out / files[name] for name in roster}
    for name in roster:
        if files[name] != f"{name}.json":
            print(f"note: the result of '{shown(name)}' is in {files[name]}", file=sys.stderr)
    try:
        times = read_times(args.times) if args.times is not None else {}
    except DeadlineError as error:
        print(f"sdpa-grade: {error}", file=sys.stderr)
        return 2
    for note in _deadline_notes(settings, everyone, times, args):
        print(f"warning: {note}", file=sys.stderr)
    handed = _handed_in(folder, roster, times, settings)
    if args.summary_only:
        _apply_deadline(handed, targets, settings)
        return _summarise_only(handed, targets, args, settings, entries.skipped)
    today = provenance.now(settings, args.device)
    why = {name: FORCED if args.force else _why(handed[name], targets[name], today) for name in roster}
    todo = [name for name in roster if why[name]]
    shard = f"shard {args.shard[0]}/{args.shard[1]}: " if args.shard else ""
    print(f"{shard}{len(roster)} students, {len(roster) - len(todo)} already graded, {len(todo)} to grade"
          f"{_why_line(why, args.force)}", file=sys.stderr)  # fmt: skip

    started = time.time()
    try:
        failures = _grade_all(todo, handed, targets, settings, args)
        again = [name for name in todo if Result.of(_read(targets[name])).grader_error]
        if again:  # the grader's own failure (a worker that did not start, a zygote that died): once more, afresh
            print(f"grading {len(again)} submission(s) again after a grader error", file=sys.stderr)
            failures = _grade_all(again, handed, targets, settings, args)
    except KeyboardInterrupt:
        print(f"\nsdpa-grade: interrupted: {_left(handed, targets, today, out, started, args.force)}", file=sys.stderr)
        return 130
    _apply_deadline(handed, targets, settings)
    results = {name: _read(targets[name]) for name in roster}
    for mode in sorted({Result.of(r).sandbox for r in results.values()} - {""}):
        print(f"sdpa-grade: {mode}", file=sys.stderr)
    stats = class_results(results)
    written = _write_grades(args, stats)
    if args.show is not None:
        from autograder.render.terminal import table

        print(f"{shown(args.show)}'s feedback:\n{table(results[args.show])}\n")
    print(inert(summary(stats, entries.skipped)))
    found = _changes_since(args, targets, stats)
    _dashboard(args, stats, found, _similarity(args, handed, results, out, settings))
    unmatched = _tell(written)
    if failures:
        print(
            f"sdpa-grade: the grader failed on {failures} submission(s); see 'grader_error' in their results",
            file=sys.stderr,
        )
        return 3
    return 1 if unmatched else 0


def _deadline_notes(settings: Settings, everyone: dict, times: dict, args: BatchOptions) -> list[str]:
    """What the [deadline] settings and --times accept but do nothing with, each a warning: an extension naming no
    student, a percent with no policy to use it, times with no due date, times for students not in the class."""
    deadline, notes = settings.deadline, []
    if deadline.due is not None and deadline.policy == "none" and deadline.percent:
        notes.append(
            f"deadline.percent is {deadline.percent:g} but deadline.policy is none: nothing is taken off"
            ' (set policy = "per_day" or "per_hour")'
        )
    strays = sorted(set(deadline.extensions) - set(everyone))
    if strays:
        notes.append(
            f"deadline.extensions names no student in {args.folder}: {', '.join(shown(s) for s in strays)}"
            " (their extension is given to nobody)"
        )
    if args.times is not None and deadline.due is None:
        notes.append(f"--times {args.times} is not used: the settings have no deadline.due (pass --config FILE)")
    elsewhere = sorted(set(times) - set(everyone))
    if args.times is not None and elsewhere:
        word = "student" if len(elsewhere) == 1 else "students"
        notes.append(
            f"--times {args.times} names {len(elsewhere)} {word} not in {args.folder}:"
            f" {', '.join(shown(s) for s in elsewhere)}"
        )
    return notes


def _handed_in(folder: Path, roster: dict, times: dict, settings: Settings) -> dict[str, HandedIn]:
    """Each student's record from the gate, read once, here, before anything is graded, with its trusted time."""
    collected = collected_by_nbgrader(folder)
    limits = settings.limits
    return {name: with_time(take(roster[name], limits), name, times, collected) for name in roster}


def _apply_deadline(handed: dict[str, HandedIn], targets: dict, settings: Settings) -> None:
    """The [deadline] policy, applied afresh to every graded result on every run (a changed due date, policy or
    extension re-applies without regrading): each result's score becomes the final one, the rest kept. Results
    an earlier policy penalised, now that this run has no deadline, get their raw score back, and a warning."""
    deadline = settings.deadline
    unstamped = 0
    for name, record_of in handed.items():
        if not targets[name].is_file():
            continue
        result = _read(targets[name])
        record = Result.of(result)
        if record.grader_error or (deadline.due is None and "late" not in record.extra_data):
            continue
        late = apply(deadline, name, record.raw_score, record_of.submitted_at, record_of.time_problem)
        stamped = stamp(result, late) if deadline.due is not None else unstamp(result)
        if stamped != result:
            write_atomically(targets[name], json.dumps(stamped, indent=2))
            unstamped += deadline.due is None
    if unstamped:
        were = "result was" if unstamped == 1 else "results were"
        print(
            f"warning: {unstamped} {were} scored under a [deadline] (late penalties taken off), and this run has no"
            " deadline.due: their raw scores are back. The policy is applied again on every run: pass the same"
            " --config and --times to every later --batch run (--summary-only, --csv-format) of this class",
            file=sys.stderr,
        )


# Why a student is graded in this run (and counted so in its first line), besides provenance.REASONS
NEW, GRADER_FAILED, FORCED = "new", "grader error", "--force"


def _why(handed: HandedIn, target: Path, today: provenance.Now) -> str:
    """Why this student is graded now ("" to keep their result): no result yet, the grader's own failure, or
    what changed since their result was graded (provenance.stale)."""
    if not target.is_file():
        return NEW
    result = _read(target)
    if Result.of(result).grader_error:
        return GRADER_FAILED
    return provenance.stale(result, handed, today)


def _counts(reasons: list[str]) -> str:
    """ "file changed 2, settings changed 1": each reason with its count, in a fixed order."""
    counted = Counter(reasons)
    order = [*provenance.REASONS, GRADER_FAILED]
    return ", ".join(f"{word} {counted[word]}" for word in order if counted[word])


def _why_line(why: dict[str, str], force: bool) -> str:
    """What the first line adds to "N to grade": how many are new, how many regraded and why."""
    if force:
        return f" (--force: all {len(why)} graded again)" if why else ""
    reasons = [word for word in why.values() if word]
    new = reasons.count(NEW)
    regraded = [word for word in reasons if word != NEW]
    parts = [f"{new} new"] if new and regraded else []
    if regraded:
        parts.append(f"{len(regraded)} regraded: {_counts(regraded)}")
    return f" ({'; '.join(parts)})" if parts else ""


def _left(roster: dict, targets: dict, today: provenance.Now, out: Path, started: float, force: bool) -> str:
    """After Ctrl-C: what is saved, what is stale, and what each command would grade now (one line). ``started``:
    when this run began grading (``time.time()``): a result written since is this run's."""
    now = {name: _why(roster[name], targets[name], today) for name in roster}
    saved = [name for name in roster if now[name] not in (NEW, GRADER_FAILED)]
    line = f"{len(saved)} of {len(roster)} results are saved in {out}"
    if force:  # a result this run has not reached is older than it, whatever its provenance says
        since = {name: targets[name].stat().st_mtime for name in saved}
        fresh = [name for name in saved if since[name] >= started]
        old = [name for name in saved if since[name] < started]
        stale = [now[name] for name in old if now[name]]
        stale_words = f" ({len(stale)} of them stale: {_counts(stale)})" if stale else ""
        plain = sum(1 for name in roster if now[name])
        return (
            f"{line}: {len(fresh)} graded by this run, {len(old)} from before it, not graded again{stale_words}; "
            f"the same command (--force) grades all {len(roster)} again; without --force, {plain} would be graded"
        )
    rest = [now[name] for name in roster if now[name]]
    if not rest:
        return f"{line}, every one up to date; the same command grades nothing more"
    stale = [word for word in rest if word not in (NEW, GRADER_FAILED)]
    parts = [f"{len(saved) - len(stale)} up to date"]
    if stale:
        parts.append(f"{len(stale)} stale ({_counts(stale)}), each kept until it is graded again")
    if len(rest) > len(stale):
        parts.append(f"{len(rest) - len(stale)} not graded yet")
    return f"{line}: {', '.join(parts)}; run the same command again to grade the {len(rest)} left"


def _summarise_only(roster: dict, targets: dict, args: BatchOptions, settings: Settings, skipped: dict) -> int:
    """--summary-only: summary and CSV of the results already written, by any machine (the merge of the shards).

    A merge that is not whole says so and writes nothing: a CSV with students left out would be
    uploaded as the class's grades. It names every student with no result yet (what to grade
    next) and exits 1; ``--partial`` asks for the summary and the CSV of what there is all the
    same, the missing students' rows marked ``missing``. Results graded with other checks or other
    settings are not added up at all (exit 2): each group is named, with where its settings came from.
    """
    missing = [name for name in roster if not targets[name].is_file()]
    mixed = _mixed({name: _read(targets[name]) for name in roster if name not in missing})
    if mixed:
        print(f"sdpa-grade: {mixed}", file=sys.stderr)
        return 2
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
    results = {name: None if name in missing else _read(targets[name]) for name in roster}
    stats = class_results(results)
    written = _write_grades(args, stats)
    print(inert(summary(stats, skipped)))
    found = _changes_since(args, targets, stats)
    similar = _similarity(args, roster, results, next(iter(targets.values())).parent, settings) if targets else None
    _dashboard(args, stats, found, similar)
    unmatched = _tell(written)
    return 1 if missing or unmatched else 0


def _dashboard(args: BatchOptions, stats: ClassResults, found, similar) -> None:
    """--report FILE: the class's dashboard (with the Changes and similarity sections asked for) and each student's
    feedback page, after a batch and after --summary-only alike."""
    if not args.report:
        return
    from autograder.render.dashboard import write_report

    pages = write_report(args.report, stats, found, similar)
    mark_output(pages)
    print(f"class dashboard: {args.report} (feedback pages in {pages})", file=sys.stderr)


def _similarity(args: BatchOptions, handed: dict[str, HandedIn], results: dict, out: Path, settings: Settings):
    """--similarity: every pair of the class compared (similarity.py), ``similarity.csv`` written in the results
    folder and its one line printed; the Similarity (for the dashboard), or None when not asked."""
    if not args.similarity:
        return None
    from autograder.course import similarity
    from autograder.render.similarity import summary_line, write_csv

    sources, skipped = {}, {}
    for name, record in handed.items():
        sources[name], skipped[name] = similarity.read_source(record, results.get(name), settings.limits)
    given = similarity.given_fingerprints(similarity.given_code())
    found = similarity.similarity(results, sources, given, skipped)
    write_csv(out / SIMILARITY_CSV, found)
    print(inert(summary_line(found)))
    return found


SIMILARITY_CSV = "similarity.csv"


def _changes_since(args: BatchOptions, targets: dict, stats: ClassResults):
    """--diff OLD: print what changed from OLD to this batch's results (its students only); the Diff, or None."""
    if args.diff is None:
        return None
    from autograder.course.diff import diff
    from autograder.render.diff import lines

    out = next(iter(targets.values())).parent if targets else args.diff
    found = diff(args.diff, out)
    print("\n" + "\n".join(lines(found)))
    return found


def _mixed(results: dict[str, dict]) -> str:
    """Why these results cannot be merged (one line naming each group of students graded alike), or "" when they
    were all graded with the same checks and settings. A grader's own failure graded nothing and is left out."""
    groups: dict[tuple[str, str], list[str]] = {}
    for name, result in results.items():
        if not Result.of(result).grader_error:
            groups.setdefault(provenance.grouping(result), []).append(name)
    if len(groups) < 2:
        return ""

    def described(key: tuple[str, str], names: list[str]) -> str:
        checks, settings = key
        if not checks:
            return f"{', '.join(shown(n) for n in names)} (no provenance: graded by an older grader)"
        source = Result.of(results[names[0]]).provenance.get("settings_from", "?")
        return (
            f"{', '.join(shown(n) for n in names)} (settings from {inert(str(source), keep_newlines=False)},"
            f" settings {settings[:12]}, checks {checks[:12]})"
        )

    named = "; ".join(described(key, names) for key, names in groups.items())
    return (
        f"these results were graded with different checks or settings, and a merge would mix them: {named}."
        " Grade them again with one settings file (the batch with --force and the same --config), then merge"
    )


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
    interrupted = Interrupts()
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
                    _grade_in_child(name, roster[name], targets[name], settings, args.device, zygote, batch)
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
    return load(path)  # one that cannot be read, or is no results record: the grader's failure on it


def _progress(done: int, total: int, name: str, target: Path, started: float) -> None:
    result = Result.of(_read(target))
    width = 30
    filled = int(width * done / max(total, 1))
    bar = "#" * filled + "-" * (width - filled)
    print(
        f"[{bar}] {done}/{total} {time.perf_counter() - started:5.0f}s  {shown(name)}: "
        f"{result.score:g}/{result.max_score:g}",
        file=sys.stderr,
    )


def _write_grades(args: BatchOptions, stats: ClassResults) -> list[str]:
    """--csv in its format; for an LMS, the lines to print last (after the summary, where they are seen): the file
    and its column, and the students left unmatched on either side (then the batch exits 1)."""
    if not args.csv:
        return []
    if args.csv_format == "plain":
        _write_csv(args.csv, stats)
        return []
    from autograder.course.gradebook import RosterError, unmatched_line, write_canvas, write_moodle

    scores = {s.name: float(Result.of(s.result).score) for s in stats.present}
    top = max((s.max_score for s in stats.present), default=0.0)
    try:
        if args.csv_format == "canvas":
            written = write_canvas(args.csv, args.roster, args.assignment, scores, top)
        else:
            written = write_moodle(args.csv, args.roster, args.assignment, scores)
    except RosterError as error:
        return [f"sdpa-grade: {error}; no --csv written"]
    grades = f"{written.matched} student's grade" if written.matched == 1 else f"{written.matched} students' grades"
    if written.column_is_new:
        others = ", ".join(f"'{inert(name, keep_newlines=False)}'" for name in written.assignments) or "none"
        where = (
            f"in a new column '{inert(written.column, keep_newlines=False)}' (the roster has no column for"
            f" --assignment {inert(args.assignment, keep_newlines=False)}; its assignments: {others})"
        )
    else:
        where = f"in the roster's column '{inert(written.column, keep_newlines=False)}'"
    lines = [f"note: {args.csv} holds {grades}, {where}"]
    for side, names in (("in the roster but not graded", written.roster_only),
                        ("graded but not in the roster", written.graded_only)):  # fmt: skip
        if names:
            lines.append(unmatched_line(side, names, args.csv))
    return lines


def _tell(lines: list[str]) -> bool:
    """Print _write_grades' lines (stderr); True when the students were not all matched."""
    for line in lines:
        print(line, file=sys.stderr)
    return any(line.startswith("sdpa-grade: ") for line in lines)


LATE_COLUMNS = ("raw_score", "late_penalty", "submitted_at", "hours_late", "extension")


# The CSV's columns after the grade: how a late penalty was reached ([deadline]; empty where none applies), and
# what graded it (provenance.py), so a grade can be traced to its file
PROVENANCE_COLUMNS = ("graded_file", "sha256", "checks_sha256", "settings_sha256", "graded_at")


def _write_csv(path: Path, stats: ClassResults) -> None:
    """The grades, one row per student (no result yet: a row that says missing), written whole or not at all.

    ``score`` is the final score (after a [deadline] penalty)."""
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(["student", "score", "max_score", "status", *LATE_COLUMNS, *PROVENANCE_COLUMNS])
    for student in stats.students:
        if student.result is None:
            writer.writerow(
                [csv_cell(student.shown), "", "", MISSING, *("" for _ in (*LATE_COLUMNS, *PROVENANCE_COLUMNS))]
            )
            continue
        result = Result.of(student.result)
        late, record = result.late or {}, result.provenance
        writer.writerow(
            [
                csv_cell(student.shown),
                result.score,
                result.max_score,
                student.status,
                *(csv_cell(str(late.get(column, ""))) for column in LATE_COLUMNS),
                *(csv_cell(str(record.get(column) or "")) for column in PROVENANCE_COLUMNS),
            ]
        )
    write_atomically(path, text.getvalue())
