"""Grade one submission: read it, run the hidden checks against its worker, score, report.

The stages run in the order of ``STAGES``; each takes and returns the same ``Grading``
record, so that a stage can be read, tested and replaced alone.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import io
import secrets
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from autograder import provenance, report, scoring
from autograder.assignment.deadline import apply
from autograder.checks import quiz
from autograder.checks.timing import one_thread
from autograder.config import Settings
from autograder.plugin import GradingPlugin, Outcome
from autograder.read import bounded
from autograder.read.handed_in import HandedIn, TimeFrom, When, submitted_time, take
from autograder.read.submission import Choice, Ungradable, is_notebook, notebook_cells, shown_name, source_of
from autograder.sandbox.client import Sandbox
from autograder.sandbox.protocol import Failure, Reply, Runner
from autograder.sandbox.report import describe
from autograder.sandbox.zygote import Zygote, first_gradient
from autograder.status import Status
from reference import attention as _reference_module

CHECKS = Path(__file__).with_name("checks")
REFERENCE = Path(_reference_module.__file__)  # read by this process; copied only into the reference's own sandbox
# pytest plugins the hidden checks do not use; each costs time in every grading
UNUSED_PLUGINS = ("logging", "unraisableexception", "threadexception", "junitxml", "doctest", "pastebin", "legacypath")
# Only the plugins named here: whatever else is installed beside the grader (anyio's, say) stays out of the checks.
PLUGINS = ("pytest_timeout",)


@dataclass
class Grading:
    """Everything known about one submission's grading, filled in stage by stage."""

    submission: Path | tuple[Path, ...]  # a file, a folder, or a batch folder's files of one name (submission.choose)
    settings: Settings
    device: str = "cpu"
    seed: int = field(default_factory=lambda: secrets.randbits(62))
    folder: Path | None = None
    handed: HandedIn | None = None  # what the gate read (a batch reads it before forking); None: read it now
    choice: Choice | None = None  # the graded file, by the one rule (submission.choose); None: none was found
    source: Path | None = None
    graded: Path | None = None  # the file the read stage read (provenance.py), None where there was none
    sha256: str | None = None  # the SHA-256 of the bytes it read, None where it read none
    graded_at: str = field(default_factory=provenance.utc_now)
    ungradable: str = ""
    missing: bool = False  # nothing could be read at the submission's path (sdpa-grade exits 2)
    grader_error: str = ""
    outcomes: list[Outcome] = field(default_factory=list)
    scored: list[scoring.Scored] = field(default_factory=list)
    questions: list[dict] = field(default_factory=list)  # the knowledge check's tests (checks/quiz.py), every path's
    log: str = ""
    started: float = field(default_factory=time.perf_counter)
    result: dict = field(default_factory=dict)
    zygote: Zygote | None = None  # a batch's shared worker zygote; None: the grading starts its own
    sandbox: str = ""  # which confinement held (sandbox/report.py), for the instructor
    time: TimeFrom | None = None  # where its submission time comes from; None: the path decides lateness itself
    when: When | None = None  # its time, read by the read stage from ``time``; None where ``time`` is None
    stages: tuple[str, ...] = ()  # the stages this grading runs, by name (provenance records them)


def run_pytest(plugin: GradingPlugin, settings: Settings, timeout: float | None = None) -> tuple[int, str]:
    """Run the hidden checks with ``plugin``; return pytest's exit code and its (captured) output.

    ``timeout`` bounds each check (pytest-timeout); by default the settings' check_timeout.
    """
    timeout = settings.limits.check_timeout if timeout is None else timeout
    return _pytest(plugin, "--timeout", str(timeout))


def _pytest(plugin: GradingPlugin, *options: str, checks: Path = CHECKS) -> tuple[int, str]:
    """pytest over the hidden checks in ``checks`` (the project's tests give a folder of their own) with ``plugin``."""
    args = [str(checks), "-c", str(checks / "pytest.ini"), "--rootdir", str(checks), "-q", "--disable-plugin-autoload"]
    args.append("--assert=plain")  # the checks fail through CheckFailure, never an assert statement: nothing to rewrite
    for plugin_name in PLUGINS:
        args += ["-p", plugin_name]
    for plugin_name in UNUSED_PLUGINS:
        args += ["-p", f"no:{plugin_name}"]
    output = io.StringIO()
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        code = pytest.main([*args, *options], plugins=[plugin])
    return code, output.getvalue()


def warm_up(settings: Settings) -> None:
    """Import, once, what every grading would import on its own: pytest's plugins, the hidden checks, and the
    parts of torch that autograd loads on first use (about 0.5 s a grading). A batch calls it before forking.

    Nothing here is decided: checks that cannot be collected fail again, as each grading's grader error."""
    _pytest(GradingPlugin(lambda: None, settings, 0, "cpu"), "--collect-only")
    with one_thread():
        first_gradient()  # with a gradient given, as the checks give one


def read(grading: Grading) -> Grading:
    """The submission's record, from the gate (a batch's, read before it forked, or read now), made into source; and
    its time, from the gate too (handed_in.submitted_time), where the path says where it comes from, for the late
    decision."""
    limits = grading.settings.limits
    handed = grading.handed if grading.handed is not None else take(grading.submission, limits)
    grading.handed, grading.choice, grading.graded, grading.sha256 = handed, handed.choice, handed.file, handed.sha256
    try:
        submitted = source_of(handed.data, handed.file, handed.sha256, handed.refusal(), grading.folder, limits)
        grading.source = submitted.source
    except Ungradable as reason:
        grading.ungradable = str(reason)
        grading.missing = reason.missing
    if grading.time is not None:
        grading.when = submitted_time(grading.time, grading.graded or grading.submission, grading.settings.deadline)
    return grading


class Unreadable(Runner):
    """The runner for a submission that could not be read: every check fails at loading, as for a syntax error.

    So an ungradable submission is scored out of the same maximum as every other one on this machine.
    """

    def __init__(self, reason: str) -> None:
        self.load_reply = Reply.failed(Failure.UNREADABLE, reason)
        self.source = ""
        self.confinement = {}  # no sandbox was needed: nothing runs

    def load(self) -> Reply:
        return self.load_reply

    def call(self, target: str, args=(), kwargs=None, *, timeout: float, **options) -> Reply:
        return self.load_reply

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
        return self.load_reply

    def own_seconds(self) -> float:
        return 0.0  # nothing of the student's ran

    def charge(self, seconds: float) -> None:
        pass  # nothing of the student's runs, so nothing is asked

    def close(self) -> None:
        pass


def measures_memory(settings: Settings) -> bool:
    """Whether a check of ``settings`` reads what a call takes (the blockwise part's memory check): then the sandbox
    measures every call's memory, every call alike (sandbox/memory.py), and otherwise none, its cost (about a third of
    an honest grading's CPU time: the page walks and the collections after each call) spared."""
    return settings.parts.blockwise_attention


def run_checks(grading: Grading) -> Grading:
    """Run the hidden checks against the submission's sandbox (and the reference's, started when a check needs
    it). This stage owns them and the zygote they fork from: each is closed once, by the ``with`` block."""
    limits = dataclasses.asdict(grading.settings.limits)
    imports = list(grading.settings.imports.allowed)  # plain names, as the limits cross
    # the grading's time budget counts from its start: no call of the student's is waited on past it
    deadline = time.monotonic() + grading.settings.limits.grading_budget - (time.perf_counter() - grading.started)
    with contextlib.ExitStack() as owned:
        if grading.ungradable:
            student: Runner = Unreadable(grading.ungradable)
            zygote = grading.zygote
        else:
            # the worker starts importing torch now, while pytest starts and collects the checks
            zygote = grading.zygote or owned.enter_context(Zygote())
        # the student's and the reference's sandboxes alike: one zygote, one device, one import rule, one measure
        sandbox = functools.partial(
            Sandbox,
            limits=limits,
            zygote=zygote,
            device=grading.device,
            imports=imports,
            measure_memory=measures_memory(grading.settings),
        )
        if not grading.ungradable:
            student = owned.enter_context(sandbox(grading.source, deadline=deadline))

        def connect() -> Runner:
            student.load()
            return student

        def connect_reference() -> Runner:
            """The reference's source, loaded in a sandbox like the student's, forked from the same zygote (torch is
            imported once), timed the same way (under the same import rule) and never seen by the student's. Only the
            student's sandbox has fused attention blocked: the reference's is trusted code. Closed before the
            student's (last in, first out).
            """
            reference = owned.enter_context(sandbox(REFERENCE, block_fused=False))
            reference.load()
            return reference

        plugin = GradingPlugin(
            connect,
            grading.settings,
            grading.seed,
            grading.device,
            connect_reference=connect_reference,
            shown=shown_name(grading.choice),
            deadline=deadline,
        )
        code, grading.log = run_pytest(plugin, grading.settings)
    grading.sandbox = describe(student.confinement) if student.confinement else ""
    grading.outcomes = list(plugin.outcomes.values())
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED) or not grading.outcomes:
        grading.grader_error = f"the hidden checks could not run (pytest exit {int(code)}):\n{grading.log[-3000:]}"
    errors = [o for o in grading.outcomes if o.status == Status.GRADER_ERROR]
    if errors:
        others = (
            f"\n(and {len(errors) - 1} more checks: {', '.join(o.check for o in errors[1:])})" if errors[1:] else ""
        )
        grading.grader_error = f"{errors[0].check}: {errors[0].message}{others}"
    return grading


def score(grading: Grading) -> Grading:
    grading.scored = scoring.score(grading.outcomes, grading.settings)
    return grading


def knowledge_check(grading: Grading) -> Grading:
    """The knowledge check, scored as nbgrader scores it (checks/quiz.py): one test per question, part of the scoring
    (``build_result`` counts them in the score and the maximum, the one writer of both). Every submission has them,
    so that every submission of the assignment is graded out of one maximum: a .py answers them at its end (the
    template's "Knowledge check"); where no answer can be read (a .py that sets none, a notebook without the answer
    cells, an ungradable submission) each counts 0, saying where the answers go."""
    handed, settings = grading.handed, grading.settings
    limits = settings.limits
    visibility = settings.gradescope.visibility
    if grading.ungradable or handed is None or handed.data is None:
        grading.questions = quiz.results([], visibility, missing=quiz.NOT_READ)
        return grading
    text = handed.data.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")  # as source_of
    if not is_notebook(handed.file):  # a .py answers at its end, under the template's "Knowledge check"
        answers = quiz.answers_in_py(text, limits.answer_chars)
        missing = "" if answers else quiz.IN_A_PY
        grading.questions = quiz.results([], visibility, limits.answer_chars, settings.lesson, missing, answers)
        return grading
    try:
        cells = notebook_cells(text, limits)
    except bounded.Refused:  # its code was read from it: not reached, and never a grader error
        grading.questions = quiz.results([], visibility, missing=quiz.NOT_READ)
        return grading
    grading.questions = quiz.results(cells, visibility, limits.answer_chars, settings.lesson)
    return grading


def build_result(grading: Grading) -> Grading:
    grading.result = report.results_json(grading)
    return grading


def decide_late(grading: Grading) -> Grading:
    """The late decision, made once, the last stage: the [deadline] policy (Gradescope's due date where its metadata
    gives one) applied to the score at the time the read stage found (``grading.when``), stamped in the result
    (report.stamp: the policy, the time and where it came from kept in ``extra_data.late``). Nothing where the grader
    failed, where there is no deadline, or where the path decides lateness itself (nbgrader's late plugin: no time)."""
    when = grading.when
    if when is None or grading.grader_error or not grading.result or when.deadline.due is None:
        return grading
    late = apply(when.deadline, when.student, float(grading.result.get("score", 0)), when.at, when.problem)
    grading.result = report.stamp(grading.result, late)
    return grading


STAGES = [read, run_checks, score, knowledge_check, build_result, decide_late]


def grade(
    submission: Path | tuple[Path, ...] | HandedIn,
    settings: Settings,
    *,
    device: str = "cpu",
    seed: int | None = None,
    zygote: Zygote | None = None,
    time: TimeFrom | None = None,
) -> Grading:
    """Run every stage on one submission (a path, or the gate's record of it) and return the filled-in record;
    ``time`` says where its submission time comes from (None: the path decides lateness itself)."""
    handed = submission if isinstance(submission, HandedIn) else None
    submission = handed.submission if handed else submission if isinstance(submission, tuple) else Path(submission)
    grading = Grading(submission, settings, device, handed=handed, zygote=zygote, time=time)
    if seed is not None:
        grading.seed = seed
    grading.stages = tuple(stage.__name__ for stage in STAGES)
    with tempfile.TemporaryDirectory(prefix="sdpa-submission-") as folder, one_thread():
        grading.folder = Path(folder)
        for stage in STAGES:
            grading = stage(grading)
    return grading
