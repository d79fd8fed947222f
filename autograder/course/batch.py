"""``sdpa-grade batch``: grade a class, several submissions at once, resumable.

Here: the batch's options (``BatchOptions``), the class listed and each student's record read through the gate
before anything is graded, the grade of record decided once the results are in (of_record.py: the late decision, the
hold of flagged work, the instructor's decisions), and ``run_batch``, which joins the jobs:
pool.py grades each student in a process of its own (one broken submission cannot stop or change another's grade),
resume.py decides who is graded again (an interrupted batch resumes where it stopped; ``--force`` regrades),
grades_csv.py writes the grades and summary.py what is printed and drawn once they are known.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path

from autograder.assignment.deadline import DeadlineError, read_times
from autograder.config import Settings
from autograder.course import of_record
from autograder.course.class_folder import Exports, Refused, check_exports, open_class, results_folder
from autograder.course.class_results import class_results
from autograder.course.grades_csv import tell, write_grades
from autograder.course.pool import grade_all
from autograder.course.resume import left_line, plan, why_line
from autograder.course.summary import changes_since, similarity_pass, write_dashboard
from autograder.read.handed_in import listing, read_class
from autograder.record import Result
from autograder.render.inert import inert, shown
from autograder.render.terminal import summary
from autograder.report import load


@dataclass(frozen=True)
class BatchOptions:
    """What ``sdpa-grade batch`` was asked to do, typed; built once from the command line (cli.py)."""

    folder: Path
    jobs: int = 2  # submissions graded at once
    device: str = "cpu"  # where the timing check runs
    json_dir: Path | None = None  # one result per student (default: DIR-grades beside DIR)
    show: str | None = None  # a student whose checks and feedback are printed too
    force: bool = False  # grade again students already graded
    shard: tuple[int, int] | None = None  # (K, N): grade only shard K of N
    times: Path | None = None  # a CSV of student,submitted_at for the [deadline] policy (else nbgrader's timestamps)
    exports: Exports = Exports()
    zygote: object = None  # the worker zygote this process forked at its start (cli.main), or None: the batch's own


def students(folder: Path, settings: Settings | None = None) -> dict[str, Path | tuple[Path, ...]]:
    """Student name -> submission: the gate's listing of the class folder (handed_in.listing), under ``settings``'
    [limits] (the defaults' without)."""
    from autograder.config import load_settings

    return listing(folder, (settings or load_settings(environ={})).limits).students


def run_batch(options: BatchOptions, settings: Settings) -> int:
    """``sdpa-grade batch``: grade who needs it, decide the grades of record, write and print what was asked."""
    try:
        return _run(options, settings)
    except Refused as error:
        print(f"{VERB}: {error}", file=sys.stderr)
        return 2


def _run(options: BatchOptions, settings: Settings) -> int:
    if options.jobs < 1:
        raise Refused(f"Invalid --jobs {options.jobs}: expected at least 1")
    if not options.folder.is_dir():
        raise Refused(f"{options.folder} is not a folder")
    try:  # before any grading: an export that cannot be made is a bad option, not a failure once the class is graded
        check_exports(options.exports, results_folder(options.folder, options.json_dir))
    except Refused as error:
        raise Refused(f"{error}; nothing graded") from None
    try:
        times = read_times(options.times) if options.times is not None else {}
    except DeadlineError as error:
        raise Refused(str(error)) from None
    the_class = open_class(options.folder, options.json_dir, settings, options.shard, options.show)
    roster, targets, out = the_class.roster, the_class.targets, the_class.out
    for note in _deadline_notes(settings, the_class.everyone, times, options):
        print(f"{VERB}: warning: {note}", file=sys.stderr)
    handed = read_class(options.folder, roster, settings.limits, times)
    planned = plan(handed, targets, settings, options.device, options.force)
    why, todo, today = planned.why, planned.todo, planned.today
    which = f"shard {options.shard[0]}/{options.shard[1]}: " if options.shard else ""
    print(f"{which}{len(roster)} students, {len(roster) - len(todo)} already graded, {len(todo)} to grade"
          f"{why_line(why, options.force)}", file=sys.stderr)  # fmt: skip

    started = time.time()
    try:
        failures = grade_all(todo, handed, targets, settings, options.jobs, options.device, options.zygote)
        again = [name for name in todo if Result.of(load(targets[name])).grader_error]
        if again:  # the grader's own failure (a worker that did not start, a zygote that died, a machine too busy):
            # once more, with a zygote started afresh where the first one died
            print(f"grading {len(again)} submission(s) again after a grader error", file=sys.stderr)
            failures = grade_all(again, handed, targets, settings, options.jobs, options.device, options.zygote)
    except KeyboardInterrupt:
        left = left_line(handed, targets, today, out, started, options.force)
        print(f"\n{VERB}: interrupted: {left}", file=sys.stderr)
        return 130
    of_record.tell(of_record.decide(handed, targets, settings, out, the_class.known), VERB)
    results = {name: load(targets[name]) for name in roster}
    for mode in sorted({Result.of(r).sandbox for r in results.values()} - {""}):
        print(f"{VERB}: {mode}", file=sys.stderr)
    stats = class_results(results)
    written = write_grades(options.exports, stats)
    if options.show is not None:
        from autograder.render.terminal import table

        print(f"{shown(options.show)}'s feedback:\n{table(results[options.show])}\n")
    print(inert(summary(stats, the_class.skipped)))
    found = changes_since(options.exports, targets, stats)
    similar = similarity_pass(options.exports, handed, results, out, settings)
    write_dashboard(options.exports, stats, found, similar)
    unmatched = tell(written, VERB)
    if failures:
        print(
            f"{VERB}: the grader failed on {failures} submission(s); see 'grader_error' in their results",
            file=sys.stderr,
        )
        return 3
    return 1 if unmatched else 0


VERB = "sdpa-grade batch"


def _deadline_notes(settings: Settings, everyone: dict, times: dict, options: BatchOptions) -> list[str]:
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
            f"deadline.extensions names no student in {options.folder}: {', '.join(shown(s) for s in strays)}"
            " (their extension is given to nobody)"
        )
    if options.times is not None and deadline.due is None:
        notes.append(f"--times {options.times} is not used: the settings have no deadline.due (pass --config FILE)")
    elsewhere = sorted(set(times) - set(everyone))
    if options.times is not None and elsewhere:
        word = "student" if len(elsewhere) == 1 else "students"
        notes.append(
            f"--times {options.times} names {len(elsewhere)} {word} not in {options.folder}:"
            f" {', '.join(shown(s) for s in elsewhere)}"
        )
    return notes
