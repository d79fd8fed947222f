"""The command lines, and only they: ``sdpa-grade VERB`` (grade one submission, batch a class, summary of a class's
results, push, the decisions, diff of two results folders) and ``sdpa-build`` (``build``), each typed into its
module's options; the older command lines (``sdpa-grade FILE``, ``--batch DIR``, ...) are read as the verb they mean."""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from autograder.config import REQUIRE_SANDBOX, ConfigError, Settings, load_settings
from autograder.course.shard import parse_shard
from autograder.interrupts import Interrupts
from autograder.quick_exit import exit_now

JOBS = 2


@dataclass(frozen=True)
class Verb:
    """One verb of ``sdpa-grade``: its line in ``sdpa-grade --help``, its command line, what it takes besides its
    options (said when that is missing or wrong), and the older command line read as it (``verb_form``; "" for a verb
    that has none)."""

    line: str
    form: str
    takes: str
    older: str


VERBS = {
    "grade": Verb(
        "grade one submission (--json: Gradescope's results.json)",
        "sdpa-grade grade SUBMISSION",
        "one SUBMISSION: an attention.py, a notebook, or a student's folder",
        "sdpa-grade SUBMISSION",
    ),
    "batch": Verb(
        "grade a class: each subfolder or file of DIR a student",
        "sdpa-grade batch DIR",
        "one class folder, DIR",
        "sdpa-grade --batch DIR",
    ),
    "summary": Verb(
        "summarise a class's results already written (merges shards)",
        "sdpa-grade summary DIR",
        "one class folder, DIR",
        "sdpa-grade --batch DIR --summary-only",
    ),
    "push": Verb(
        "send the class's final scores to the LMS by LTI 1.3 ([lti])",
        "sdpa-grade push DIR",
        "one class folder, DIR",
        "",
    ),
    "hold": Verb(
        "keep a student's grade out of every export until cleared",
        "sdpa-grade hold DIR STUDENT --reason TEXT",
        "the class folder DIR and one STUDENT",
        "",
    ),
    "clear": Verb(
        "release a held grade to every export",
        "sdpa-grade clear DIR STUDENT",
        "the class folder DIR and one STUDENT",
        "",
    ),
    "override": Verb(
        "set a student's grade of record (a reason kept)",
        "sdpa-grade override DIR STUDENT SCORE --reason TEXT",
        "the class folder DIR, one STUDENT and the SCORE",
        "",
    ),
    "extend": Verb(
        "grant an extension after grading (late decided again)",
        "sdpa-grade extend DIR STUDENT --until TIME --reason TEXT",
        "the class folder DIR and one STUDENT",
        "",
    ),
    "undo": Verb(
        "take back a student's last decision",
        "sdpa-grade undo DIR STUDENT",
        "the class folder DIR and one STUDENT",
        "",
    ),
    "diff": Verb(
        "compare two results folders, student by student",
        "sdpa-grade diff OLD NEW",
        "two results folders, OLD NEW",
        "sdpa-grade --diff OLD NEW",
    ),
}

DECISION_VERBS = ("hold", "clear", "override", "extend", "undo")


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose usage errors also say what the command or its verb takes (``takes``), and which keeps
    the options it takes (``options``: its own and its parents', as they are added). An option is taken by its whole
    name only: batch's --json-dir is never read from a --json meant for grade."""

    def __init__(self, *args, takes: str = "", **kwargs) -> None:
        self.options: set[str] = set()  # first: argparse adds -h, --help through add_argument
        for parent in kwargs.get("parents", ()):
            self.options |= parent.options
        super().__init__(*args, allow_abbrev=False, **kwargs)
        self.takes = takes
        self.verbs: dict[str, _Parser] = {}  # the command's: each verb's own parser

    def add_argument(self, *names, **kwargs):
        self.options.update(name for name in names if name.startswith("-"))
        return super().add_argument(*names, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.refuse(f"{message} ({self.prog} takes {self.takes})" if self.takes else message)

    def refuse(self, message: str) -> NoReturn:
        """The usage, then one line saying why; exit 2."""
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}\n")


def _shard(text: str) -> tuple[int, int]:
    """--shard's type: K/N, or argparse's usage error naming the value."""
    try:
        return parse_shard(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def parser() -> _Parser:
    """``sdpa-grade VERB ...``: one parser, a subparser per verb with the options that verb uses, and nothing else."""
    p = _Parser(
        prog="sdpa-grade",
        description="Grade scaled dot-product attention submissions.",
        epilog="sdpa-grade VERB --help lists a verb's options. The older forms are read as verbs: "
        + "; ".join(f"{verb.older} as {verb.form}" for verb in VERBS.values() if verb.older)
        + ".",
        takes="a verb: " + ", ".join(verb.form.removeprefix("sdpa-grade ") for verb in VERBS.values()),
    )
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True, parser_class=_Parser)

    # the options shared by the verbs that take them, each declared once
    settings = _Parser(add_help=False)
    settings.add_argument("--config", type=Path, metavar="FILE", help="settings that override the defaults")
    grading = _Parser(add_help=False)
    grading.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="where the timing check runs")
    grading.add_argument("--require-sandbox", action="store_true", help=f"{REQUIRE_SANDBOX} (exit 3)")
    a_class = _Parser(add_help=False)
    a_class.add_argument(
        "batch",
        type=Path,
        metavar="DIR",
        help="the class: each subfolder of DIR is a student (nbgrader's submitted/ works), and so is each .py or"
        " .ipynb file at DIR's top",
    )
    a_class.add_argument(
        "--json-dir", type=Path, metavar="DIR", help="one results.json per student (default DIR-grades beside DIR)"
    )
    a_class.add_argument("--csv", type=Path, metavar="FILE", help="write the grades as CSV")
    a_class.add_argument(
        "--csv-format",
        choices=("plain", "canvas", "moodle"),
        default="plain",
        help="the CSV's format: plain (the default: student, score, ...), or a gradebook file Canvas or Moodle"
        " imports, made from --roster",
    )
    a_class.add_argument(
        "--roster",
        type=Path,
        metavar="FILE",
        help="--csv-format canvas|moodle: the gradebook CSV the LMS itself exports (its students and identity columns)",
    )
    a_class.add_argument(
        "--assignment",
        default="sdpa",
        metavar="TITLE",
        help="--csv-format canvas|moodle: the assignment's name in the LMS (Canvas's 'TITLE (id)' column is found by"
        " it; default sdpa)",
    )
    a_class.add_argument(
        "--report",
        type=Path,
        metavar="FILE",
        help="write a class dashboard (self-contained HTML), with a feedback page per student beside it",
    )
    a_class.add_argument(
        "--shard",
        type=_shard,
        metavar="K/N",
        help="only shard K (0..N-1) of N, by a hash of each student's name (docs/scale.md)",
    )
    a_class.add_argument(
        "--similarity",
        action="store_true",
        help="also compare every pair of students, by their code and by their answers (identical wrong answers weigh"
        " most); writes similarity.csv in --json-dir, and --report lists the pairs that stand out, for the"
        " instructor's review (never a deduction)",
    )
    a_class.add_argument(
        "--diff",
        type=Path,
        metavar="OLD",
        help="compare OLD, an earlier results folder, with these results: one line per student whose grade changed"
        " (and --report shows the changes)",
    )

    def verb(name: str, *parents: _Parser) -> _Parser:
        said = VERBS[name]
        p.verbs[name] = verbs.add_parser(name, parents=parents, help=said.line, description=said.line, takes=said.takes)
        return p.verbs[name]

    grade = verb("grade", settings, grading)
    grade.add_argument(
        "submission", type=Path, metavar="SUBMISSION", help="an attention.py, a notebook, or a student's folder"
    )
    grade.add_argument("--json", type=Path, metavar="FILE", help="write Gradescope's results.json here")
    grade.add_argument(
        "--html", type=Path, metavar="FILE", help="also write the feedback as a self-contained HTML page, with pictures"
    )
    grade.add_argument(
        "--submitted-at",
        metavar="TIME",
        help="when it was handed in (ISO 8601 with an offset, or nbgrader's timestamp.txt format such as"
        " '2026-12-01 23:59:00.000000 UTC'), for the [deadline] policy; a notebook nbgrader collected takes the"
        " timestamp.txt beside it without this",
    )
    grade.add_argument(
        "--metadata",
        type=Path,
        metavar="FILE",
        help="Gradescope's submission_metadata.json (its time, the student's extension there, and its due date where"
        " the settings set a policy but no due date); the bundle's run_autograder passes it",
    )
    grade.add_argument("--seed", type=int, help=argparse.SUPPRESS)

    batch = verb("batch", settings, grading, a_class)
    batch.add_argument(
        "--times",
        type=Path,
        metavar="FILE",
        help="submission times, a CSV with columns student,submitted_at (ISO 8601 with an offset), for the [deadline]"
        " policy; without it, nbgrader's timestamp.txt in each student's folder, else the time each result's record"
        " already holds. The late decision is made here, once: summary and push read it",
    )
    batch.add_argument("--jobs", type=int, default=JOBS, help=f"submissions graded at once (default {JOBS})")
    batch.add_argument("--force", action="store_true", help="grade again students already graded")
    batch.add_argument(
        "--show", metavar="STUDENT", help="also print STUDENT's checks and feedback, as one grading does"
    )

    summary = verb("summary", settings, a_class)
    summary.add_argument(
        "--partial",
        action="store_true",
        help="with students missing, summarise and write the CSV all the same (their rows say missing); still exit 1"
        " (without it: name them, write nothing and exit 1)",
    )

    push = verb("push", settings)
    push.add_argument(
        "batch",
        type=Path,
        metavar="DIR",
        help="the class, as summary takes it (its results: DIR-grades, or --json-dir)",
    )
    push.add_argument(
        "--json-dir",
        type=Path,
        metavar="DIR",
        help="the class's results (default DIR-grades beside DIR), as summary reads them",
    )
    push.add_argument(
        "--dry-run",
        action="store_true",
        help="send nothing: print each student's score on the platform and the new one, and whom the platform lacks",
    )
    push.add_argument(
        "--offline",
        action="store_true",
        help="a dry run that asks no platform (implies --dry-run; [lti] and the lms extra not needed): each student's"
        " final score and the identity it would be sent to, unchecked",
    )

    for name in DECISION_VERBS:
        decision = verb(name, settings)
        decision.add_argument("batch", type=Path, metavar="DIR", help="the class folder, as batch took it")
        decision.add_argument("student", metavar="STUDENT", help="the student, as the class folder names them")
        if name == "override":
            decision.add_argument("score", type=float, metavar="SCORE", help="the grade of record, 0 to the maximum")
        if name == "extend":
            decision.add_argument(
                "--until", required=True, metavar="TIME", help="the new due date, ISO 8601 with an offset"
            )
        decision.add_argument(
            "--json-dir", type=Path, metavar="DIR", help="the class's results (default DIR-grades beside DIR)"
        )
        decision.add_argument(
            "--reason",
            default="",
            metavar="TEXT",
            help="why, kept with the decision and shown on the dashboard and in the diff"
            + (" (required)" if name in ("hold", "override", "extend") else ""),
        )

    diff = verb("diff")
    diff.add_argument("old", type=Path, metavar="OLD", help="the earlier results folder (as batch's --json-dir writes)")
    diff.add_argument("new", type=Path, metavar="NEW", help="the later results folder")
    diff.add_argument("--csv", type=Path, metavar="FILE", help="also write one row per student and check that moved")
    return p


class OlderForm(ValueError):
    """An older command line that names no verb's arguments: what to write instead."""


def verb_form(argv: Sequence[str]) -> list[str]:
    """The command line as its verb's, decided here once. A verb (or -h, --help) first, or nothing, is kept as it is;
    the older forms are read as the verb they mean: ``--batch DIR`` as ``batch DIR`` (with ``--summary-only``:
    ``summary DIR``), ``--diff OLD NEW`` as ``diff OLD NEW``, and anything else as ``grade`` (``sdpa-grade FILE``).
    Raises OlderForm for ``--summary-only`` without ``--batch DIR``, and ``--batch`` without its DIR."""
    words = list(argv)
    if not words or words[0] in VERBS or words[0] in ("-h", "--help"):
        return words
    summary = "--summary-only" in words
    if summary:
        words.remove("--summary-only")
    if "--batch" in words:
        at = words.index("--batch")
        if at + 1 == len(words) or words[at + 1].startswith("-"):
            raise OlderForm(f"--batch takes the class's folder: use: {VERBS['batch'].form}")
        folder = words.pop(at + 1)
        del words[at]
        return ["summary" if summary else "batch", folder, *words]
    given = [word for word in words if word.startswith("--batch=")]
    if given:
        words.remove(given[0])
        return ["summary" if summary else "batch", given[0].removeprefix("--batch="), *words]
    if summary:
        raise OlderForm(f"--summary-only summarises a class's results: use: {VERBS['summary'].form}")
    if "--diff" in words:
        words.remove("--diff")
        return ["diff", *words]
    return ["grade", *words]


def command(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line (``sys.argv[1:]`` by default), read once: the verb (``verb``) and its options; a usage error
    (exit 2, naming the option and the verbs it fits) for anything else."""
    argv = sys.argv[1:] if argv is None else list(argv)
    p = parser()
    try:
        words = verb_form(argv)
    except OlderForm as error:
        p.refuse(str(error))
    args, extra = p.parse_known_args(words)
    if extra:
        option = extra[0].split("=", 1)[0]
        owners = [verb for verb, sub in p.verbs.items() if option in sub.options]  # by whole name
        if owners:
            said = f"{option} does not apply to {args.verb}: it is an option of {', '.join(owners)}"
        else:
            said = f"unrecognized arguments: {' '.join(extra)}"
        if words[:1] != argv[:1]:  # an older form, read as a verb
            said += f" ({VERBS[args.verb].older} is {VERBS[args.verb].form})"
        p.verbs[args.verb].refuse(said)
    return args


def main(argv: list[str] | None = None) -> int:
    early = Interrupts()  # Ctrl-C landing in the fork's at-fork callbacks (logging's) is noted here, never lost
    zygote = None
    try:
        zygote = _early_zygote(argv)  # first: forked before anything of the grading is loaded (settings, reference)
        early.check()
    except KeyboardInterrupt:  # Ctrl-C while torch is imported for it: nothing is written yet
        early.restore()
        if zygote is not None:
            zygote.close()
        return _interrupted(command(argv))
    early.restore()
    try:
        args = command(argv)
        args.zygote = zygote
        try:
            return _main(args)
        except KeyboardInterrupt:  # Ctrl-C before the grading (imports, settings) or after it: nothing more is written
            return _interrupted(args)
    finally:
        if zygote is not None:
            zygote.close()


def forks_zygote(argv: Sequence[str], loaded=sys.modules) -> bool:
    """Whether ``sdpa-grade`` with these arguments forks its worker zygote at the start: the command line, read as
    ``command`` reads it, is the grade verb with no seed given or the batch verb, and the process has loaded nothing
    of a grading (not a test's or a caller's: their memory is not the zygote's). A diff and the verbs that only read
    results grade nothing with it, help and a usage error grade nothing, and a seed given on the command line is a
    secret that this process's memory holds from its start (the zygote is then started afresh). A SUBMISSION or a
    class folder that is not there is told at once, with no zygote (its torch import: 2 of a missing path's 2.6 s)."""
    if any(name in loaded for name in ("pytest", "reference", "autograder.grade")):
        return False
    quiet = io.StringIO()
    try:
        with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):  # main reads it again, and says
            args = command(argv)
    except SystemExit:  # help, or a usage error
        return False
    if args.verb == "batch":  # its gradings fork from this zygote; the class is read after the fork
        return Path(args.batch).is_dir()
    return args.verb == "grade" and args.seed is None and Path(args.submission).exists()


def _early_zygote(argv: list[str] | None):
    """For one submission or a class graded in a fresh process (``sdpa-grade grade FILE``, ``sdpa-grade batch DIR``):
    the worker zygote, forked from this process once torch is imported, so that torch is imported once; None where it
    is not (then the grading, or the batch, starts its own)."""
    if not forks_zygote(sys.argv[1:] if argv is None else argv):
        return None
    from autograder.sandbox.zygote import Zygote  # here, not at the top: it imports torch (about 1.1 s), for grade only

    return Zygote(fork=True)


def _interrupted(args: argparse.Namespace) -> int:
    """Ctrl-C before the verb ran (torch imported for the zygote, the settings read): nothing written."""
    kept = f" ({args.json} is as it was)" if getattr(args, "json", None) else ""  # grade's results file
    print(f"sdpa-grade {args.verb}: interrupted: nothing written{kept}", file=sys.stderr)
    return 130


def _main(args: argparse.Namespace) -> int:
    """The verb, run: its settings read where it takes --config (diff reads results only), its options typed and
    handed to its module."""
    settings = None
    if "config" in args:
        try:
            settings = load_settings(args.config)
        except ConfigError as error:
            print(f"sdpa-grade {args.verb}: {error}", file=sys.stderr)
            return 2
        if getattr(args, "require_sandbox", False):  # the verbs that grade
            settings = settings.replace("limits", require_sandbox=True)
    return VERB_RUNS[args.verb](args, settings)


# Each verb's options, typed from argparse's Namespace and handed to the verb's module: argparse stops here. Each
# verb's module is imported when that verb runs, and only then: all of them at the top made every `sdpa-grade --help`
# and usage error take 0.185 CPU-s instead of 0.082 (medians of 9), the batch's pool brings torch (about 1.1 s), and
# the zygote that `grade` and `batch` fork at the start holds no more of the grader than cli.py and config.py
# (docs/security.md).


def _grade(args: argparse.Namespace, settings: Settings) -> int:
    from autograder.course.grade_verb import GradeOptions, run_grade

    options = GradeOptions(args.submission, args.json, args.html, args.submitted_at, args.metadata, args.device,
                           args.seed, args.zygote)  # fmt: skip
    return run_grade(options, settings)


def _exports(args: argparse.Namespace):
    """batch's and summary's files and pages, typed (class_folder.Exports), checked by the verb."""
    from autograder.course.class_folder import Exports

    return Exports(args.csv, args.csv_format, args.roster, args.assignment, args.report, args.diff, args.similarity)


def _batch(args: argparse.Namespace, settings: Settings) -> int:
    from autograder.course.batch import BatchOptions, run_batch

    options = BatchOptions(args.batch, args.jobs, args.device, args.json_dir, args.show, args.force, args.shard,
                           args.times, _exports(args), args.zygote)  # fmt: skip
    return run_batch(options, settings)


def _summary(args: argparse.Namespace, settings: Settings) -> int:
    from autograder.course.summary import SummaryOptions, run_summary

    return run_summary(SummaryOptions(args.batch, args.json_dir, args.shard, args.partial, _exports(args)), settings)


def _push(args: argparse.Namespace, settings: Settings) -> int:
    from autograder.course.push_verb import PushOptions, run_push

    return run_push(PushOptions(args.batch, args.json_dir, args.dry_run, args.offline), settings)


def _decision(args: argparse.Namespace, settings: Settings) -> int:
    from autograder.course.decide import DecisionOptions, run_decision

    options = DecisionOptions(args.verb, args.batch, args.student, args.reason, args.json_dir,
                              getattr(args, "score", None), getattr(args, "until", ""))  # fmt: skip
    return run_decision(options, settings)


def _diff(args: argparse.Namespace, settings: None) -> int:
    from autograder.course.diff import DiffOptions, run_diff

    return run_diff(DiffOptions(args.old, args.new, args.csv))


VERB_RUNS = {"grade": _grade, "batch": _batch, "summary": _summary, "push": _push, "diff": _diff,
             **dict.fromkeys(DECISION_VERBS, _decision)}  # fmt: skip


def build_parser() -> argparse.ArgumentParser:
    """``sdpa-build``'s command line."""
    p = argparse.ArgumentParser(
        prog="sdpa-build",
        description="Regenerate what students receive (student_template/: the stubs, requirements.txt, the handout;"
        " the nbgrader source notebook) from the single source in reference/ and docs/handout.md.",
    )
    p.add_argument("--check", action="store_true", help="only report stale generated files (exit 1 if any)")
    p.add_argument("--root", type=Path, default=None, help="project folder (default: found from the current one)")
    p.add_argument("--gradescope", type=Path, metavar="ZIP", help="also write a Gradescope autograder bundle")
    p.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="settings to build with (the lesson's shapes, [lesson]; the optional parts, [parts]) and to ship in the"
        " Gradescope bundle",
    )
    p.add_argument(
        "--torch",
        choices=("cpu", "gpu"),
        default="cpu",
        help="the torch build the bundle's setup.sh installs: cpu (default) or gpu (the default index's CUDA build)",
    )
    return p


def build(argv: list[str] | None = None) -> int:
    """The ``sdpa-build`` command: its command line typed into release/build.py's options, and run there."""
    from autograder.release.build import BuildOptions, run_build  # the build's modules: only when it runs

    args = build_parser().parse_args(argv)
    return run_build(BuildOptions(args.check, args.root, args.gradescope, args.config, args.torch))


def run() -> None:
    """The ``sdpa-grade`` command: ``main``, then the exit without the interpreter's teardown (quick_exit.py)."""
    exit_now(main())


if __name__ == "__main__":
    run()
