"""The pytest plugin that runs the hidden checks: fixtures, the ``check`` marker, and outcomes.

Checks never compute points: each declares its facts in its marker,
``@pytest.mark.check(function=..., category=..., points=..., exercises=(...), picture=...)``: the student
function it is about (one the reference defines), its category, what it is worth (a settings file may
override it: assignment/catalogue.py reads the markers for the settings), the kinds of input it exercises
(``checks/mistakes.INPUTS``: where a borrowed cause can show) and the tiny example pictured when it
fails (``checks/examples.EXAMPLES``, or None). They are validated when the checks are collected and
carried into each ``Outcome``; points come from the settings and are applied later, by autograder.scoring.
"""

from __future__ import annotations

import time
import traceback
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from autograder.checks.cases import Draw
from autograder.checks.examples import EXAMPLES
from autograder.checks.expect import CheckFailure
from autograder.checks.loading import explain
from autograder.checks.mistakes import INPUTS
from autograder.checks.pictures import picture
from autograder.checks.student import FUNCTIONS, Reference, Student, StudentFault
from autograder.checks.substitution import Substituted, candidates
from autograder.config import Settings
from autograder.sandbox.protocol import Failure, GraderBusy, GraderFault, Runner, busy_message
from autograder.status import Category, Status

# a check past its limit (pytest-timeout) where the student's own time took a busy_factor-th of it at least
TIMED_OUT = "the check ran out of time (the student's code is far too slow or stuck)"
FACTS = ("function", "category", "points", "exercises", "picture")  # what every check's marker declares


@dataclass
class Outcome:
    """One check's result, before points: passed, failed, not-run, or the grader's own error."""

    check: str
    function: str
    category: Category
    status: Status
    message: str = ""
    seconds: float = 0.0
    mistake: str = ""  # the named mistake's key (autograder.checks.mistakes.SENTENCES), when one was recognised
    cause: str = ""  # the likely cause in words (the mistake's sentence, or a hint); "Likely cause: " is the edge's
    evidence: dict | None = None  # where the result first differs (index, expected, got, error, allowed, shape)
    picture: dict | None = None  # a tiny public example's weights, expected and got (autograder.checks.pictures)
    flag: str = ""  # an integrity flag's key (autograder.checks.flags.REASONS): listed for the instructor's review
    exercises: tuple[str, ...] = ()  # the kinds of input the check exercises (its marker's, of checks/mistakes.INPUTS)
    builds_on: tuple[str, ...] = ()  # the student's functions whose fix makes the failed result right (with evidence)
    edge: bool = False  # failed on an edge shape only (checks/expect.edge_case): its gates stay open


class GradingPlugin:
    """Fixtures and bookkeeping for one grading run.

    ``connect`` readies whatever runs the student's code (a worker sandbox) and returns it; it is
    called at most once, lazily. Whoever made the runners closes them (``grade.run_checks``), not the plugin.
    ``shown`` is what the feedback calls the submission.
    """

    def __init__(
        self,
        connect: Callable[[], Runner],
        settings: Settings,
        seed: int,
        device: str,
        connect_reference: Callable[[], Runner] | None = None,
        shown: str = "attention.py",
        deadline: float | None = None,
    ) -> None:
        # underscored: pytest would take public attributes named like fixtures for fixtures
        self._connect = connect
        self._settings = settings
        self._seed = seed
        self._device = device
        self._shown = shown  # what the feedback calls the submission: attention.py, or "your notebook"
        self.outcomes: dict[str, Outcome] = {}
        self._runner: Runner | None = None
        self._load_failure_shown_in: str | None = None  # the check whose feedback says why loading failed
        self._pictured: set[str] = set()  # student functions already pictured in this run: one picture each
        # the reference solution, run as the student's code is (a second sandbox): the timing checks' yardstick
        self._connect_reference = connect_reference
        self._student: Student | None = None
        self._connect_failed: Exception | None = None
        self._reference: Reference | None = None
        self._deadline = deadline  # time.monotonic() when the grading's time budget runs out; None: no budget
        self._own_at_check = 0.0  # the student's own time (its runner's) when the current check started

    def pytest_configure(self, config: pytest.Config) -> None:
        config.addinivalue_line(
            "markers", "check(function, category, points, exercises, picture): a graded check of one student function"
        )

    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        """Every check declares its facts, each a known one, and has points in the settings, before anything runs; the
        checks of a part the settings turn off ([parts]) are not run."""
        off = self._settings.parts.off()
        dropped = [item for item in items if _function_of(item) in off]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = [item for item in items if item not in dropped]
        for item in items:
            marker = item.get_closest_marker("check")
            if marker is None:
                raise pytest.UsageError(f"{item.nodeid} has no @pytest.mark.check marker")
            problem = facts_problem(marker)
            if problem:
                raise pytest.UsageError(f"{item.nodeid}: {problem}")
            if check_id(item) not in self._settings.points:
                raise pytest.UsageError(f"{item.nodeid}: no [points] entry {check_id(item)!r} in the settings")

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        """Once the grading's time budget has run out, every check still to run fails as the student's time-out,
        before any of it runs (the runner refuses the student's calls by then too), or is the grader's error where the
        student's own time took less than a ``busy_factor``-th of the budget (the machine's load spent it); a GPU check
        on a machine without CUDA is shown not run, as always, so the maximum score stays the same for every
        submission. Notes the student's own time at the check's start, for its own limit (pytest_runtest_makereport)."""
        self._own_at_check = self._own_seconds()
        if self._deadline is not None and time.monotonic() >= self._deadline:
            if "gpu" in item.fixturenames and self._no_gpu():
                pytest.skip(self._no_gpu())  # not run, as for every submission here: one maximum score for all
            budget = self._settings.limits.grading_budget
            if self._spent_by_the_machine(budget, self._own_at_check):
                raise GraderBusy(busy_message("the grading", budget, self._own_at_check))
            raise StudentFault(
                f"not run: the grading's time budget of {budget:g} s ran out before this check "
                "(the submission's calls together took too long)"
            )

    def _own_seconds(self) -> float:
        """The student's own time in its calls so far (its runner's count; none before it is started, or where the
        runner keeps none)."""
        count = getattr(self._runner, "own_seconds", None)
        return 0.0 if count is None else count()

    def _spent_by_the_machine(self, limit: float, own: float) -> bool:
        """Whether a wall-clock ``limit`` that ran out is the machine's, not the student's: the student's own time in
        it (``own``) was under a ``busy_factor``-th of it, as for a call (the grader and the student both waited for
        a CPU, or the grader's own work took the time)."""
        return own < limit / self._settings.limits.busy_factor

    @pytest.hookimpl(hookwrapper=True)
    def pytest_pyfunc_call(self, pyfuncitem: pytest.Function):
        """A check that failed for the student's result is run again with the functions it may build on answered by
        the reference (checks/substitution.py): passed so, its failure builds on them (``builds_on``, and "fix X
        first" as its cause where it has none of its own); else it builds on nothing, whatever the check said. Only
        the student's failure in the rerun (CheckFailure, StudentFault) is "still failing": the grader's own failure
        there (a GraderFault, or an exception of the grader's code: SubstitutionError) makes the check the grader's
        error, which a batch grades again, never a failure without the evidence."""
        result = yield
        try:
            result.get_result()
        except (CheckFailure, StudentFault) as error:
            try:
                error.builds_on = self._substituted(pyfuncitem, error)
            except GraderFault as fault:  # the machine or the reference failed the rerun: the grader's error
                result.force_exception(fault)
            except Exception as bug:  # noqa: BLE001 - the grader's own code failed in the rerun: its error, not "no evidence"
                result.force_exception(_rerun_failed(pyfuncitem, bug))
        except BaseException:  # noqa: BLE001 - the grader's own error, or pytest's: reported as it is
            pass

    def _substituted(self, item: pytest.Function, error: Exception) -> tuple[str, ...]:
        """The functions the failed check ``item`` builds on, shown by its substituted run, or ()."""
        facts = item.get_closest_marker("check").kwargs
        category = Category(facts["category"])
        if category in (Category.INTEGRITY, Category.LOAD) or self._student is None:
            return ()
        if category == Category.TIMING and getattr(error, "flag", "") != "timed_answer_wrong":
            return ()
        function = facts["function"]
        failing = {
            o.function
            for o in self.outcomes.values()
            if o.status == Status.FAILED and o.category not in (Category.INTEGRITY, Category.TIMING, Category.MEMORY)
        }
        standing_in = candidates(function, failing, self._student.entered.get(function, set()))
        if not standing_in:
            return ()
        substituted = Substituted(self._student, standing_in, measured=category == Category.MEMORY)
        arguments = {name: item.funcargs[name] for name in item._fixtureinfo.argnames}
        arguments.update(
            {name: substituted for name in ("loaded", "student") if name in arguments},
        )
        if "draw" in arguments:
            arguments["draw"] = Draw(self._seed ^ zlib.crc32(item.name.encode()))
        try:
            item.obj(**arguments)
        except (CheckFailure, StudentFault):  # still failing (or failing otherwise) with the reference's answers
            return ()
        built_on = tuple(name for name in standing_in if name in substituted.answered)
        own_cause = getattr(error, "mistake", "") or (
            getattr(error, "cause", "") and not getattr(error, "guessed", False)
        )
        if built_on and not own_cause:
            named = " and ".join(built_on)
            error.cause = (
                f"it builds on {named}: your {function} passes this check once {named} gives the reference's results"
                f" (it was run again with {named} answered by the reference): fix {named} first"
            )
        return built_on

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo):
        outcome = yield
        report = outcome.get_result()
        if report.when == "call" or (report.when == "setup" and not report.passed):
            facts = item.get_closest_marker("check").kwargs
            status, message = _status(report, call)
            if status == Status.FAILED and message == TIMED_OUT:  # the check's own limit (pytest-timeout), by the clock
                limit, own = float(item.config.getoption("timeout")), self._own_seconds() - self._own_at_check
                if self._spent_by_the_machine(limit, own):
                    status, message = Status.GRADER_ERROR, busy_message("the check", limit, own)
            error = call.excinfo.value if call.excinfo else None
            fields = ("mistake", "cause", "evidence", "flag")  # a CheckFailure's, an IntegrityFlag's
            mistake, cause, evidence, flag = (getattr(error, key, None) for key in fields)
            if status == Status.PASSED and (noted := dict(item.user_properties).get("review")):
                flag, message = noted  # passed, with a note for the instructor's review (flags.review)
            function = facts["function"]
            failed_here = status == Status.FAILED and report.when == "call"
            shown = self._picture(item, function, facts["picture"]) if failed_here else None
            self.outcomes[check_id(item)] = Outcome(
                check_id(item),
                function,
                Category(facts["category"]),
                status,
                message,
                report.duration,
                mistake or "",
                cause or "",
                evidence or None,
                shown,
                flag or "",
                exercises=tuple(facts["exercises"]),
                builds_on=tuple(getattr(error, "builds_on", ()) or ()),
                edge=getattr(error, "edge", False) is True,
            )

    def _picture(self, item: pytest.Item, function: str, example: str | None) -> dict | None:
        """The tiny example's weights (the check's own) for the first failed check of a function that has one."""
        student = item.funcargs.get("loaded")
        if example is None or student is None or function in self._pictured:
            return None
        shown = picture(student, function, example, self._settings.for_check(check_id(item)).tolerance)
        if shown is not None:
            self._pictured.add(function)
        return shown

    # The proxies are made once per grading and kept here: the fixtures that hand them out are per check, since
    # pytest deprecates session-scoped fixtures defined as instance methods (PytestRemovedIn10Warning).
    @pytest.fixture
    def student(self) -> Student:
        """The one proxy to the student's code, for the whole grading (the ops it saw are the integrity check's)."""
        if self._student is None:
            if self._connect_failed is not None:  # once, as a session-scoped fixture would: every check fails alike
                raise self._connect_failed
            try:
                self._runner = self._connect()
            except Exception as error:
                self._connect_failed = error
                raise
            self._student = Student(self._runner, self._settings.limits.call_timeout)
        return self._student

    @pytest.fixture
    def reference(self) -> Reference:
        """The reference solution behind the same proxy, in a runner of the same kind as the student's,
        started on first use (a check that fails or skips before timing anything starts none)."""
        if self._reference is None:
            if self._connect_reference is None:
                raise RuntimeError("this grading has no runner for the reference (connect_reference)")
            self._reference = Reference(_Deferred(self._connect_reference), self._settings.limits.call_timeout)
        return self._reference

    @pytest.fixture
    def loaded(self, student: Student, request: pytest.FixtureRequest) -> Student:
        """The student's module, or the reason it could not be loaded, as a failure of the check."""
        reply = self._runner.load_reply
        if not reply.ok:
            if self._load_failure_shown_in is None:
                self._load_failure_shown_in = check_id(request.node)
                if reply.failure is Failure.UNREADABLE:  # nothing was read: the reason is the student's sentence
                    raise StudentFault(f"not graded: {reply.message}")
                allowed = self._settings.imports.allowed
                raise StudentFault(
                    explain(reply.error, reply.message, self._runner.source, self._shown, allowed=allowed)
                )
            # the reason once, in the first check; every other check points there
            what = "not graded" if reply.failure is Failure.UNREADABLE else f"{self._shown} could not be loaded"
            raise StudentFault(f"not run: {what} (the reason is under {self._load_failure_shown_in})")
        return student

    @pytest.fixture
    def source(self, student: Student) -> str:
        """The submission's Python source, as the runner read it (in the trusted process for sdpa-grade)."""
        return self._runner.source

    @pytest.fixture
    def shown(self) -> str:
        """What the feedback calls the submission: attention.py, or "your notebook" (whose lines are cited by cell)."""
        return self._shown

    @pytest.fixture
    def settings(self, request: pytest.FixtureRequest) -> Settings:
        """The grading's settings as this check reads them: its own [tolerance.<check>], if set, in place of
        [tolerance]'s keys."""
        return self._settings.for_check(check_id(request.node))

    @pytest.fixture
    def device(self) -> str:
        return self._device

    @pytest.fixture
    def gpu(self) -> str:
        """Skips the check (not run) on a machine without CUDA, before the student's code is asked for anything.

        Listed before ``loaded``, so that a GPU check is "not run" for every submission on such a
        machine, loadable or not, and every submission has the same maximum score.
        """
        if self._no_gpu():
            pytest.skip(self._no_gpu())
        return "cuda"

    def _no_gpu(self) -> str:
        """Why this grading runs no GPU check ("" where it runs them)."""
        import torch

        if self._device != "cuda" or not torch.cuda.is_available():
            return "the grading machine has no CUDA device"
        return ""

    @pytest.fixture
    def draw(self, request: pytest.FixtureRequest) -> Draw:
        """Inputs of this check: fresh each run, independent of the order the checks run in."""
        return Draw(self._seed ^ zlib.crc32(request.node.name.encode()))


class SubstitutionError(RuntimeError):
    """The grader's own code failed while a failed check ran again with the reference's answers (a bug in the check's
    or the substitution's code, not the student's): the check is the grader's error, which a batch grades again,
    never a failure left without the evidence the rerun would have given."""


def _rerun_failed(item: pytest.Function, bug: Exception) -> SubstitutionError:
    """The grader's error that a bug in the substituted rerun of ``item`` makes, its cause chained."""
    error = SubstitutionError(
        f"{check_id(item)}: the grader's own code raised {type(bug).__name__} while the check ran again with the"
        f" functions it builds on answered by the reference: {bug}"
    )
    error.__cause__ = bug
    return error


class _Deferred:
    """A runner started by ``connect`` on first use; a reference that does not load is the grader's error."""

    def __init__(self, connect: Callable[[], Runner]) -> None:
        self._connect = connect
        self._runner: Runner | None = None

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        if self._runner is None:
            self._runner = self._connect()
            if not self._runner.load_reply.ok:
                raise RuntimeError(f"the reference did not load: {self._runner.load_reply.describe()}")
        return getattr(self._runner, name)


def facts_problem(marker: pytest.Mark) -> str:
    """What is wrong with a check's declared facts (one clause, for the collection error), or "" when nothing is."""
    facts = marker.kwargs
    if marker.args:
        return f"@pytest.mark.check takes its facts as keywords ({', '.join(f'{name}=' for name in FACTS)})"
    declares = ", ".join(FACTS)
    missing = [name for name in FACTS if name not in facts]
    if missing:
        return f"@pytest.mark.check lacks {', '.join(f'{name}=' for name in missing)}: every check declares {declares}"
    unknown = sorted(set(facts) - set(FACTS))
    if unknown:
        return f"@pytest.mark.check has unknown {', '.join(f'{name}=' for name in unknown)}: it declares {declares}"
    if facts["function"] not in FUNCTIONS:
        return f"function={facts['function']!r} is not one the reference defines ({', '.join(FUNCTIONS)})"
    if facts["category"] not in set(Category):
        return f"unknown category {facts['category']!r}"
    worth = facts["points"]
    if isinstance(worth, bool) or not isinstance(worth, (int, float)) or worth < 0:
        return f"points={worth!r}: a non-negative number"
    exercises = facts["exercises"]
    if not isinstance(exercises, (tuple, list)) or not set(exercises) <= set(INPUTS):
        return f"exercises={exercises!r}: a tuple of {', '.join(repr(name) for name in INPUTS)}"
    if facts["picture"] is not None and facts["picture"] not in EXAMPLES:
        return f"picture={facts['picture']!r}: None or one of the tiny examples {', '.join(map(repr, EXAMPLES))}"
    return ""


def _function_of(item: pytest.Item) -> str | None:
    marker = item.get_closest_marker("check")
    return marker.kwargs.get("function") if marker is not None else None


def check_id(item: pytest.Item) -> str:
    return item.name.removeprefix("test_")


def _status(report: pytest.TestReport, call: pytest.CallInfo) -> tuple[Status, str]:
    if report.passed:
        return Status.PASSED, ""
    if report.skipped:
        return Status.NOT_RUN, str(report.longrepr[2]).removeprefix("Skipped: ")
    error = call.excinfo.value if call.excinfo else None
    if isinstance(error, (CheckFailure, StudentFault)):
        return Status.FAILED, str(error)
    if call.excinfo and call.excinfo.typename == "Failed" and "Timeout" in str(error):
        return Status.FAILED, TIMED_OUT
    detail = "".join(traceback.format_exception(error)) if error else str(report.longrepr)
    return Status.GRADER_ERROR, detail
