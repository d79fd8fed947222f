"""``sdpa-grade``: grade one submission, or a class with ``--batch``."""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from pathlib import Path

from autograder.config import ConfigError, load_settings
from autograder.shard import parse_shard


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
        help="refuse to grade (grader error, exit 3) where namespaces, Landlock or seccomp are missing",
    )
    p.add_argument("--seed", type=int, help=argparse.SUPPRESS)
    return p


JOBS = 2
# options that mean something for one mode only: given in the other, they would be ignored, so they are refused
BATCH_ONLY = ("csv", "json_dir", "report", "force", "shard", "summary_only", "partial", "show", "jobs")
ONE_ONLY = {
    "json": "--json-dir DIR (one results.json per student)",
    "html": "--report FILE (a dashboard and a page per student)",
}


def refused(args: argparse.Namespace) -> str:
    """Why these options cannot go together (one line), or "" when they can: nothing given is ever ignored."""
    given = [name for name in BATCH_ONLY if getattr(args, name) not in (None, False)]
    if args.batch is None:
        if given:
            option = "--" + given[0].replace("_", "-")
            return f"{option} applies to --batch DIR only; for one submission use --json FILE and --html FILE"
        return ""
    if args.submission is not None:
        return f"give a SUBMISSION or --batch DIR, not both (got {args.submission} and --batch {args.batch})"
    for name, instead in ONE_ONLY.items():
        if getattr(args, name) is not None:
            return f"--{name} applies to one submission only; with --batch use {instead}"
    return ""


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    reason = refused(args)
    if reason:
        print(f"sdpa-grade: {reason}", file=sys.stderr)
        return 2
    args.jobs = JOBS if args.jobs is None else args.jobs
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
        from autograder.batch import BatchOptions, run_batch

        options = BatchOptions(
            folder=args.batch, jobs=args.jobs, device=args.device, json_dir=args.json_dir, csv=args.csv,
            report=args.report, show=args.show, force=args.force, shard=args.shard, summary_only=args.summary_only,
            partial=args.partial,
        )  # fmt: skip
        return run_batch(options, settings)
    if args.submission is None:
        parser().error("give a SUBMISSION, or --batch DIR")
    from autograder.render.inert import inert
    from autograder.report import grader_failure, table

    try:
        from autograder.grade import grade  # inside: a broken install is the grader's failure too

        grading = grade(args.submission, settings, device=args.device, seed=args.seed)
        result, error = grading.result, grading.grader_error
    except Exception:  # noqa: BLE001 - the grader's own fault: loud, and still a valid results file
        result = grader_failure(traceback.format_exc())
        error = result["grader_error"]
    if args.json:  # first: whatever printing meets, the results file is there
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2))
    if not result.get("ungradable"):  # nothing was graded: the one line below says why, not a table of zeros
        print(table(result))
    sandbox = result.get("extra_data", {}).get("sandbox")
    if sandbox:
        print(f"sdpa-grade: {sandbox}", file=sys.stderr)
    if args.html:
        from autograder.render.html import write_student_page
        from autograder.roster import student_of

        write_student_page(args.html, student_of(args.submission), result)
    if error:
        print(f"sdpa-grade: the grader failed:\n{inert(error)}", file=sys.stderr)
        return 3
    if result.get(
        "ungradable"
    ):  # missing or unreadable: a results file (score 0) is written all the same, for Gradescope
        print(f"sdpa-grade: nothing to grade: {inert(result['ungradable'], keep_newlines=False)}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
