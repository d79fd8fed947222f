"""``sdpa-grade``: grade one submission, or a class with ``--batch``."""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from pathlib import Path

from autograder.atomic import write_atomically
from autograder.config import REQUIRE_SANDBOX, ConfigError, load_settings
from autograder.course.shard import parse_shard
from autograder.interrupts import Interrupts
from autograder.quick_exit import exit_now


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="sdpa-grade", description="Grade scaled dot-product attention submissions.")
    p.add_argument("submission", nargs="?", type=Path, help="an attention.py, a notebook, or a student's folder")
    p.add_argument("--json", type=Path, metavar="FILE", help="write Gradescope's results.json here")
    p.add_argument(
        "--html", type=Path, metavar="FILE", help="also write the feedback as a self-contained HTML page, with pictures"
    )
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="where the timing check runs")
    p.add_argument("--config", type=Path, metavar="FILE", help="settings that override the defaults")
    p.add_argument(
        "--batch",
        type=Path,
        metavar="DIR",
        help="grade a class: each subfolder of DIR is a student (nbgrader's submitted/ works), and so is each .py"
        " or .ipynb file at DIR's top",
    )
    p.add_argument("--jobs", type=int, help=f"submissions graded at once in --batch (default {JOBS})")
    p.add_argument("--csv", type=Path, metavar="FILE", help="--batch: write the grades as CSV")
    p.add_argument(
        "--json-dir",
        type=Path,
        metavar="DIR",
        help="--batch: one results.json per student (default DIR-grades beside DIR)",
    )
    p.add_argument(
        "--report",
        type=Path,
        metavar="FILE",
        help="--batch: write a class dashboard (self-contained HTML), with a feedback page per student beside it",
    )
    p.add_argument("--force", action="store_true", help="--batch: grade again students already graded")
    p.add_argument(
        "--shard",
        type=parse_shard,
        metavar="K/N",
        help="--batch: grade only shard K (0..N-1) of N, by a hash of each student's name (docs/scale.md)",
    )
    p.add_argument(
        "--summary-only",
        action="store_true",
        help="--batch: grade nothing; summarise (and --csv) the results already in --json-dir (merges shards);"
        " with students missing, name them, write nothing and exit 1",
    )
    p.add_argument(
        "--partial",
        action="store_true",
        help="--summary-only: with students missing, summarise and write the CSV all the same (their rows"
        " say missing); still exit 1",
    )
    p.add_argument(
        "--show", metavar="STUDENT", help="--batch: also print STUDENT's checks and feedback, as one grading does"
    )
    p.add_argument(
        "--require-sandbox",
        action="store_true",
        help=f"{REQUIRE_SANDBOX} (exit 3)",
    )
    p.add_argument(
        "--diff",
        type=Path,
        nargs="+",
        metavar="FOLDER",
        help="--diff OLD NEW: compare two results folders (as --json-dir writes them), one line per student"
        " whose grade changed (with --csv FILE, one row per student and check that moved); with --batch DIR,"
        " --diff OLD compares OLD with this batch's results (and --report shows the changes)",
    )
    p.add_argument(
        "--csv-format",
        choices=("plain", "canvas", "moodle"),
        help="--batch --csv: plain (the default: student, score, ...), or a gradebook file Canvas or Moodle imports,"
        " made from --roster",
    )
    p.add_argument(
        "--roster",
        type=Path,
        metavar="FILE",
        help="--csv-format canvas|moodle: the gradebook CSV the LMS itself exports (its students and identity columns)",
    )
    p.add_argument(
        "--assignment",
        default="sdpa",
        metavar="TITLE",
        help="--csv-format canvas|moodle: the assignment's name in the LMS (Canvas's 'TITLE (id)' column is found by"
        " it; default sdpa)",
    )
    p.add_argument(
        "--times",
        type=Path,
        metavar="FILE",
        help="--batch: submission times, a CSV with columns student,submitted_at (ISO 8601 with an offset), for the"
        " [deadline] policy; without it, nbgrader's timestamp.txt in each student's folder",
    )
    p.add_argument(
        "--submitted-at",
        metavar="TIME",
        help="one submission: when it was handed in (ISO 8601 with an offset, or nbgrader's timestamp.txt format such"
        " as '2026-12-01 23:59:00.000000 UTC'), for the [deadline] policy; a notebook nbgrader collected takes"
        " the timestamp.txt beside it without this",
    )
    p.add_argument(
        "--metadata",
        type=Path,
        metavar="FILE",
        help="one submission: Gradescope's submission_metadata.json (its time, the student's extension there, and"
        " its due date where the settings set a policy but no due date); the bundle's run_autograder passes it",
    )
    p.add_argument(
        "--similarity",
        action="store_true",
        help="--batch: also compare every pair of students, by their code and by their answers (identical wrong"
        " answers weigh most); writes similarity.csv in --json-dir, and --report lists the pairs that stand out,"
        " for the instructor's review (never a deduction)",
    )
    p.add_argument("--seed", type=int, help=argparse.SUPPRESS)
    return p


JOBS = 2
# options that mean something for one mode only: given in the other, they would be ignored, so they are refused
BATCH_ONLY = (
    "csv", "json_dir", "report", "force", "shard", "summary_only", "partial", "show", "jobs", "times", "csv_format",
    "roster", "similarity",
)  # fmt: skip
ONE_ONLY = {
    "json": "--json-dir DIR (one results.json per student)",
    "html": "--report FILE (a dashboard and a page per student)",
    "submitted_at": "--times FILE (a CSV of student,submitted_at)",
    "metadata": "--times FILE (a CSV of student,submitted_at)",
}

# what one submission takes instead of a batch's option, where it is not --json / --html
ONE_INSTEAD = {"times": "--submitted-at TIME (ISO 8601 with an offset) or --metadata FILE (Gradescope's)"}


def refused(args: argparse.Namespace) -> str:
    """Why these options cannot go together (one line), or "" when they can: nothing given is ever ignored."""
    given = [name for name in BATCH_ONLY if getattr(args, name) not in (None, False)]
    if args.diff is not None:
        wanted = 1 if args.batch is not None else 2
        if len(args.diff) != wanted:
            return "--diff takes two results folders, OLD NEW (with --batch DIR: one, OLD)"
        others = [name for name in given if name != "csv"] + [
            n for n in ("submission", "json", "html") if getattr(args, n)
        ]
        if args.batch is None and others:
            option = others[0] if others[0] == "submission" else "--" + others[0].replace("_", "-")
            return f"--diff OLD NEW compares two results folders and grades nothing: {option} does not apply"
    if args.batch is None and args.diff is not None:
        return ""
    if args.batch is None:
        if given:
            option = "--" + given[0].replace("_", "-")
            instead = ONE_INSTEAD.get(given[0], "--json FILE and --html FILE")
            return f"{option} applies to --batch DIR only; for one submission use {instead}"
        return ""
    if args.submission is not None:
        return f"give a SUBMISSION or --batch DIR, not both (got {args.submission} and --batch {args.batch})"
    for name, instead in ONE_ONLY.items():
        if getattr(args, name) is not None:
            return f"--{name.replace('_', '-')} applies to one submission only; with --batch use {instead}"
    return ""


def _grade_one(args: argparse.Namespace, settings) -> tuple[dict, str]:
    """Grade ``args.submission``: its result, and the grader's error ("" when it graded)."""
    from autograder.report import grader_failure

    try:
        from autograder.grade import grade  # inside: a broken install is the grader's failure too

        grading = grade(args.submission, settings, device=args.device, seed=args.seed, zygote=args.zygote)
        return grading.result, grading.grader_error
    except Exception:  # noqa: BLE001 - the grader's own fault: loud, and still a valid results file
        from autograder.provenance import failed

        result = grader_failure(traceback.format_exc(), failed(settings, args.device))
        return result, result["grader_error"]


def main(argv: list[str] | None = None) -> int:
    zygote = _early_zygote(argv)  # first: forked before anything of the grading is loaded (no settings, no reference)
    try:
        args = parser().parse_args(argv)
        args.zygote = zygote
        try:
            return _main(args)
        except KeyboardInterrupt:  # Ctrl-C before the grading (imports, settings) or after it: nothing more is written
            return _interrupted(args)
    finally:
        if zygote is not None:
            zygote.close()


# options (as argparse takes their shortest prefixes) after which no zygote is forked at the start: a batch and a
# diff grade otherwise or not at all, help grades nothing, and a seed given on the command line is a secret that
# this process's memory holds from its start (the zygote is then started afresh, as a batch's is)
_NOT_FORKED = ("--b", "--di", "--se", "-h", "--h")


def forks_zygote(argv: list[str], loaded=sys.modules) -> bool:
    """Whether ``sdpa-grade`` with these arguments forks its worker zygote at the start: one submission, no seed
    given, and a process that has loaded nothing of a grading (not a test's or a caller's: their memory is not the
    zygote's)."""
    fresh = not any(name in loaded for name in ("pytest", "reference", "autograder.grade"))
    return fresh and not any(arg.startswith(_NOT_FORKED) for arg in argv)


def _early_zygote(argv: list[str] | None):
    """For one submission graded in a fresh process (``sdpa-grade FILE``): the worker zygote, forked from this process
    once torch is imported, so that torch is imported once; None where it is not (then the grading starts its own)."""
    if not forks_zygote(sys.argv[1:] if argv is None else argv):
        return None
    from autograder.sandbox.runner import Zygote

    return Zygote(fork=True)


def _interrupted(args: argparse.Namespace) -> int:
    if getattr(args, "written", False):
        print(f"sdpa-grade: interrupted: {args.json} is written, whole; nothing else is", file=sys.stderr)
    else:
        kept = f" ({args.json} is as it was)" if args.json else ""
        print(f"sdpa-grade: interrupted: nothing written{kept}", file=sys.stderr)
    return 130


def _main(args: argparse.Namespace) -> int:
    reason = refused(args)
    if reason:
        print(f"sdpa-grade: {reason}", file=sys.stderr)
        return 2
    args.jobs = JOBS if args.jobs is None else args.jobs
    if args.diff is not None and args.batch is None:
        return compare(args.diff[0], args.diff[1], args.csv)
    if args.submitted_at is not None:
        from autograder.assignment.deadline import DeadlineError, parse_given_time

        try:
            args.submitted_at = parse_given_time(args.submitted_at, "Invalid --submitted-at")
        except DeadlineError as error:
            print(f"sdpa-grade: {error}", file=sys.stderr)
            return 2
    try:
        settings = load_settings(args.config)
    except ConfigError as error:
        print(f"sdpa-grade: {error}", file=sys.stderr)
        return 2
    if args.html or args.report:
        from autograder.render.images import MissingMatplotlib, require

        try:
            require()
        except MissingMatplotlib as error:
            print(
                f"sdpa-grade: {'--html' if args.html else '--report'} draws with matplotlib,"
                f" which is not installed: {error}",
                file=sys.stderr,
            )
            return 2
    if args.require_sandbox:
        settings = settings.replace("limits", require_sandbox=True)
    if args.batch is not None:
        from autograder.course.batch import BatchOptions, run_batch

        if (args.csv_format or "plain") != "plain" and (args.csv is None or args.roster is None):
            print(f"sdpa-grade: --csv-format {args.csv_format} needs --csv FILE and --roster FILE (the LMS's own"
                  " gradebook export)", file=sys.stderr)  # fmt: skip
            return 2
        if args.roster is not None and (args.csv_format or "plain") == "plain":
            print("sdpa-grade: --roster goes with --csv-format canvas or moodle", file=sys.stderr)
            return 2

        options = BatchOptions(
            folder=args.batch, jobs=args.jobs, device=args.device, json_dir=args.json_dir, csv=args.csv,
            report=args.report, show=args.show, force=args.force, shard=args.shard, summary_only=args.summary_only,
            partial=args.partial, diff=args.diff[0] if args.diff else None, times=args.times,
            csv_format=args.csv_format or "plain", roster=args.roster, assignment=args.assignment,
            similarity=args.similarity,
        )  # fmt: skip
        return run_batch(options, settings)
    if args.submission is None:
        parser().error("give a SUBMISSION, or --batch DIR")
    from autograder.record import Result
    from autograder.render.inert import inert
    from autograder.render.terminal import table

    with Interrupts() as interrupts:
        try:
            result, error = _grade_one(args, settings)
            if not error:
                result = _late(result, args, settings)
        except KeyboardInterrupt:
            interrupts.seen = True
        if interrupts.seen:  # whatever the grading made of it (pytest stops, the worker dies): nothing is written
            return _interrupted(args)
        if args.json:  # first: whatever printing meets, the results file is there, whole or as it was
            args.json.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(args.json, json.dumps(result, indent=2))
            args.written = True
    record = Result.of(result)
    if not record.ungradable:  # nothing was graded: the one line below says why, not a table of zeros
        print(table(result))
    if record.sandbox:
        print(f"sdpa-grade: {record.sandbox}", file=sys.stderr)
    if args.html:
        from autograder.course.roster import student_of
        from autograder.render.html import write_student_page

        write_student_page(args.html, student_of(args.submission), result)
    if error:
        print(f"sdpa-grade: the grader failed:\n{inert(error)}", file=sys.stderr)
        return 3
    if record.ungradable:  # missing or unreadable: a results file (score 0) is written all the same, for Gradescope
        print(f"sdpa-grade: nothing to grade: {inert(record.ungradable, keep_newlines=False)}", file=sys.stderr)
        return 2
    return 0


def compare(old: Path, new: Path, csv_path: Path | None) -> int:
    """--diff OLD NEW: print what changed (and write the CSV); 2 when a folder cannot be compared."""
    from autograder.course.diff import Unusable, diff
    from autograder.render.diff import lines, write_csv

    try:
        found = diff(old, new)
    except Unusable as error:
        print(f"sdpa-grade: --diff: {error}", file=sys.stderr)
        return 2
    print("\n".join(lines(found)))
    if csv_path is not None:
        write_csv(csv_path, found)
    return 0


def _late(result: dict, args: argparse.Namespace, settings) -> dict:
    """One submission's result with the [deadline] policy applied, where a deadline (or Gradescope's) applies.

    The time: ``--submitted-at``, else Gradescope's metadata (``--metadata``), else, for a file nbgrader collected
    in a course, nbgrader's timestamp.txt beside it (handed_in.collected_time, as the batch takes it). Where none is
    found, no penalty is taken and stderr says why."""
    from autograder.assignment.deadline import apply, gradescope_time
    from autograder.read.handed_in import collected_time
    from autograder.record import Result
    from autograder.report import stamp

    deadline, submitted, problem = settings.deadline, None, ""
    if args.metadata is not None:
        student, submitted, deadline = gradescope_time(args.metadata, deadline)
        problem = "" if submitted else f"no trusted submission time: {args.metadata} gives none (created_at)"
    else:
        graded = Result.of(result).graded_file
        name, handed = collected_time(args.submission / graded if graded and args.submission.is_dir()
                                      else args.submission)  # fmt: skip
        student, submitted, problem = name or args.submission.stem, handed.submitted_at, handed.time_problem
    if args.submitted_at is not None:
        submitted, problem = args.submitted_at, ""
    if deadline.due is None:
        return result
    late = apply(deadline, student, float(Result.of(result).score), submitted, problem)
    if late.missing_time:
        print(f"sdpa-grade: no late penalty applied: {late.time_problem}", file=sys.stderr)
    return stamp(result, late)


def run() -> None:
    """The ``sdpa-grade`` command: ``main``, then the exit without the interpreter's teardown (quick_exit.py)."""
    exit_now(main())


if __name__ == "__main__":
    run()
