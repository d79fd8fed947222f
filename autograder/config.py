"""Grading settings: declared once, with their types and bounds; resolved and validated in one place.

Each section of defaults.toml is one frozen dataclass below: a field per key, its type, its
bounds (whether zero is allowed, a minimum, the choices) and its help. The values
themselves live in defaults.toml, the file an instructor copies (and a test checks that the
two name the same keys); its comments are the helps, written by ``sdpa-build`` from here and
checked by ``sdpa-build --check`` (autograder/release/settings_file.py), never edited there.
Precedence, highest first: ``--config FILE`` on the command line, the ``SDPA_GRADE_CONFIG``
environment variable, the defaults shipped beside this file. A file may
set any subset of the keys; each value is validated before any student code runs, and an error
names the bad value and where it came from.
"""

from __future__ import annotations

import dataclasses
import os
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import ClassVar

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from autograder.assignment.catalogue import CHECKS, catalogue
from autograder.assignment.catalogue import points as declared_points
from autograder.assignment.deadline import Deadline, DeadlineError
from autograder.assignment.deadline import parse as parse_deadline

DEFAULTS = Path(__file__).with_name("defaults.toml")
ENV_VAR = "SDPA_GRADE_CONFIG"
DTYPES = ("float64", "float32", "float16", "bfloat16")
# one help, four places: [limits] require_sandbox, sdpa-grade --require-sandbox, c.GradeNotebook.require_sandbox
REQUIRE_SANDBOX = (
    "refuse to grade (a grader error) where namespaces, Landlock or seccomp are missing; sdpa-grade --require-sandbox"
    " and nbgrader's c.GradeNotebook.require_sandbox = True set it too"
)


class ConfigError(ValueError):
    """A setting that cannot be used, with the place it came from."""


def setting(
    help: str,
    *,
    zero: bool = False,
    minimum: float | None = None,
    choices: tuple[str, ...] = (),
    needs: tuple[str, ...] = (),
    url: bool = False,
):
    """A key's declaration: what it means, whether 0 means something (no time or memory does not; no retry
    does), the least value that can work, for a word the words allowed (none: any text), for a list of names the
    names it must hold, and for a text whether it is a web address (empty, or HTTPS: ``check_url``). Its type is
    the field's."""
    return field(
        metadata={"help": help, "zero": zero, "minimum": minimum, "choices": choices, "needs": needs, "url": url}
    )


@dataclass(frozen=True)
class Tolerance:
    """[tolerance]: how far a student's value may be from the reference's (docs/grading.md).

    Called, it gives a dtype's (atol, rtol): ``settings.tolerance("float32", scale=size)``. ``checks`` holds the
    [tolerance.<check>] tables: one check's own atol and rtol keys (``for_check``)."""

    ABOUT: ClassVar[str] = (
        "Largest allowed |student - reference| is atol + scale_rtol * scale + rtol * |reference|, each of the compared"
        " dtype (times gradient_factor for gradients), with the reference in float64 and scale the size of the numbers"
        " the compared values are computed from (see float64_scale_rtol). Each is 10x"
        " or more above the largest error of correct math written the ways students write it (float32-rounded"
        " constants and a float32 softmax included), measured by bench/tolerances.py; float64 values therefore accept"
        " float32-level rounding (keeping the dtype is the dtype check's job). Wrong math misses by 0.17 or more, 10^4"
        " times the float64/float32 tolerance. In float16 and bfloat16 honest and wrong are too close for 10x on both"
        " sides: the check that uses them (sdpa_dtypes) judges wrong math by its float32 case. See docs/grading.md."
        " One check's own tolerance: a table [tolerance.<check>], such as [tolerance.softmax_masked] with"
        " float32_atol = 1e-4, sets these atol and rtol keys for that check alone (the checks that compare within"
        " this tolerance: docs/grading.md, section Tolerances); the check's other keys, and every other check, keep"
        " this section's."
    )

    float64_atol: float = setting("absolute tolerance for float64 results")
    float64_rtol: float = setting("relative tolerance for float64 results")
    float32_atol: float = setting("absolute tolerance for float32 results")
    float32_rtol: float = setting("relative tolerance for float32 results")
    float16_atol: float = setting("absolute tolerance for float16 results")
    float16_rtol: float = setting("relative tolerance for float16 results")
    bfloat16_atol: float = setting("absolute tolerance for bfloat16 results")
    bfloat16_rtol: float = setting("relative tolerance for bfloat16 results")
    float64_scale_rtol: float = setting(
        "float64: added to atol per unit of `scale`, the size of the numbers the compared values are computed from"
        " (the largest |score| a softmax sees; for attention, the largest |q . k| / sqrt(d_k) times the largest"
        " |value|): 5 epsilons of the dtype the contract accepts for the computation (float32 for float64 and float32"
        " inputs, the input's own below). A float32 softmax inside float64 work on scores of size 1e4 errs by up to"
        " 1e-3 and passes; float16 there errs by 0.25 or more and fails (bench/tolerances.py, docs/grading.md)",
        zero=True,
    )
    float32_scale_rtol: float = setting("float32: added to atol per unit of the inputs' size", zero=True)
    float16_scale_rtol: float = setting("float16: added to atol per unit of the inputs' size", zero=True)
    bfloat16_scale_rtol: float = setting("bfloat16: added to atol per unit of the inputs' size", zero=True)
    gradient_factor: float = setting(
        "gradients accumulate more rounding: their tolerance is this many times the values'", minimum=1.0
    )
    variance_rtol: float = setting(
        "dot_product_variance must land within this fraction of d_k (about 7 standard errors at 10000 samples)"
    )
    checks: Mapping[str, Mapping[str, float]] = field(
        default_factory=dict,
        metadata={"help": "check -> its [tolerance.<check>] table: its own atol and rtol keys", "table": True},
    )

    def __call__(self, dtype_name: str, gradient: bool = False, scale: float = 0.0) -> tuple[float, float]:
        """(atol, rtol) for a dtype, widened for gradients.

        ``scale`` is the size of the numbers the compared values are computed from (the largest
        |score| a softmax sees, say): rounding in the dtype the contract accepts for the computation
        grows with it, so ``{dtype}_scale_rtol * scale`` joins atol (logits of size 1e4 carry float32
        errors of order 1e4 x 6e-8, whatever size the weights have).
        """
        if dtype_name not in DTYPES:
            raise KeyError(f"no tolerance for dtype {dtype_name!r}")
        factor = self.gradient_factor if gradient else 1.0
        atol = getattr(self, f"{dtype_name}_atol") + getattr(self, f"{dtype_name}_scale_rtol") * scale
        return atol * factor, getattr(self, f"{dtype_name}_rtol") * factor

    def for_check(self, check: str) -> Tolerance:
        """This tolerance as ``check`` compares within it: its [tolerance.<check>] keys in place of this section's."""
        own = self.checks.get(check)
        return dataclasses.replace(self, **own) if own else self


# the keys a [tolerance.<check>] table may set: each dtype's atol and rtol
CHECK_TOLERANCE_KEYS = tuple(f"{dtype}_{kind}" for dtype in DTYPES for kind in ("atol", "rtol"))


def tolerance_checks() -> list[str]:
    """The checks a [tolerance.<check>] table may name: those that compare values within settings.tolerance(...)."""
    return [entry.check for entry in catalogue() if entry.tolerance]


@dataclass(frozen=True)
class Timing:
    """[timing]: the timing checks' budget and how they measure it (docs/performance.md)."""

    budget: float = setting(
        "the student's scaled_dot_product_attention may take at most this many times the reference's time",
        minimum=1.0,
    )
    rounds: int = setting(
        "interleaved measurements (student, reference, student, ...) after warm-up, shared among the three call forms"
        " (no mask, a bool mask, is_causal=True: 3 rounds each); each form's median counts, the slowest decides"
    )
    retries: int = setting("times a failing measurement is repeated before the check fails", zero=True)
    when_no_gpu: str = setting(
        'what the GPU timing check is worth when the grading machine has no CUDA device: "exclude" (shown as not'
        ' run, worth 0 of 0), "award" (full points) or "fail" (0 points)',
        choices=("exclude", "award", "fail"),
    )


@dataclass(frozen=True)
class Limits:
    """[limits]: what the student's code may take, per call and per sandbox (docs/security.md).

    The sandbox side (autograder/sandbox) reads these as plain values (``dataclasses.asdict``): it imports
    nothing of the grader's."""

    call_timeout: float = setting(
        "seconds one call of a student function may take before it is stopped: the student's own time (the wall clock"
        " less the time its process waited for a CPU, or its CPU time if more), so a loaded machine never turns an"
        " honest call into a time-out; a call stretched past busy_factor times this by load is a grader error"
    )
    after_hang_timeout: float = setting(
        "once any call has hung, every later call gets at most this many seconds, so a hostile submission is graded"
        " in about the time of an honest one (honest calls take milliseconds)"
    )
    load_timeout: float = setting("seconds the submission may take to load (import)")
    check_timeout: float = setting(
        "seconds for a whole check by the wall clock (pytest-timeout), a backstop above the per-call limit: the"
        " student's time-out where the student's own time in the check took a busy_factor-th of it, else a grader"
        " error (the machine too busy)"
    )
    grading_budget: float = setting(
        "seconds one whole grading may take by the wall clock, from its start to its result: once they are spent no"
        " call of the student's is waited on, and every check still to run fails as the student's time-out where the"
        " student's own time took a busy_factor-th of them, else as a grader error (the machine too busy; the"
        " results file is still written). An honest grading takes about 8 to 12 s (docs/performance.md); a hostile one"
        " that hangs costs a call_timeout and a few after_hang_timeouts more. 120 s is ten times an honest grading,"
        " well under Gradescope's 10 minutes, and bounds how long one student holds a batch's slot"
    )
    memory_mb: int = setting("memory cap of the submission's processes, MiB", minimum=1024)
    output_kb: int = setting("what student code may print, KiB; the rest is dropped")
    processes: int = setting(
        "processes (and threads) the submission may have at once: its pids cgroup, or RLIMIT_NPROC where there is none"
    )
    tmp_mb: int = setting("size of each of the sandbox's private /tmp and /dev/shm (tmpfs, counted in its memory), MiB")
    tmp_inodes: int = setting("files each of the sandbox's private /tmp and /dev/shm may hold")
    reply_mb: int = setting(
        "the most one answer from the worker may carry, MiB (the largest real one, gradients included, is under 4 MiB)"
    )
    busy_factor: float = setting(
        "a call that the machine's load stretches past this many times its limit, by the wall clock, is the grader's"
        " error (the machine is too busy to grade fairly), never the student's time-out; so is a check or a grading"
        " that runs out of its limit while the student's own time in it is under this many-th of that limit",
        minimum=1.0,
    )
    require_sandbox: bool = setting(REQUIRE_SANDBOX)
    folder_depth: int = setting(
        'the search for the graded file in a student\'s folder (docs/instructor.md, "Which file is graded") looks'
        " this many levels of folders deep; past it (or past folder_files) it stops: the best file found so far is"
        " graded and the student flagged, or, with none found, the submission is ungradable"
    )
    folder_files: int = setting(
        "files and folders the search for the graded file looks at, in all, counted as it walks (past it, as past"
        " folder_depth)"
    )
    notebook_file_mb: int = setting(
        "the largest notebook file (.ipynb) the grading process reads, MiB, outputs included, checked before it is"
        " read; its outputs and attachments are then dropped without being decoded (what a student printed never"
        " counts against notebook_mb)",
        minimum=1,
    )
    notebook_mb: int = setting(
        "the largest notebook the grading process decodes once its outputs and attachments are dropped, MiB (its"
        " code, markdown and metadata); a submission past this bound, or any below, is ungradable, with the bound"
        " named",
        minimum=1,
    )
    notebook_depth: int = setting(
        "how deep a notebook's JSON may nest, counted before it is decoded (a notebook Jupyter saves nests about 5)",
        minimum=8,
    )
    notebook_containers: int = setting(
        "the most JSON lists and objects a notebook may hold, counted before it is decoded (Jupyter saves a few per"
        " cell; 16 MiB of empty lists cost the grading process 654 MiB)",
        minimum=1000,
    )
    source_kb: int = setting(
        "the most code graded, KiB (attention.py, or the notebook's code cells: the reference is 11 KiB), checked"
        " before anything parses it",
        minimum=16,
    )
    answer_chars: int = setting(
        "the characters of one knowledge-check answer cell read (an answer is one line); a longer one is not read",
        minimum=100,
    )


@dataclass(frozen=True)
class Imports:
    """[imports]: what a submission may import besides Python's standard library (docs/instructor.md).

    The sandbox side reads it as plain values, as it reads [limits]: the worker refuses any other import made by the
    submission's code, and the sandbox lets it read only these packages and what they need (docs/security.md)."""

    allowed: tuple[str, ...] = setting(
        "What a submission may import besides Python's standard library: top-level module names (a name allows its"
        ' submodules: "matplotlib" allows matplotlib.pyplot). Any other import the submission\'s code makes fails as'
        " if the module were not installed, on every path (sdpa-grade grade, batch, nbgrader, the Gradescope bundle),"
        " whatever the grading machine has installed; the sandbox can read only these packages and what they need."
        " Each must be installed where grading runs (the grader refuses to grade otherwise), and torch must be among"
        " them.",
        needs=("torch",),
    )


@dataclass(frozen=True)
class Gradescope:
    """[gradescope]: what the Gradescope bundle's results.json shows students."""

    visibility: str = setting(
        "when students see each check's result on Gradescope: visible, after_due_date or after_published. Gradescope"
        " hides the total score too while any test is hidden: with after_due_date students see no score until the due"
        " date",
        choices=("visible", "after_due_date", "after_published"),
    )


@dataclass(frozen=True)
class Scoring:
    """[scoring]: how points follow from the checks' outcomes (docs/grading.md, "Error carried forward")."""

    borrowed: str = setting(
        "a check that fails only because a function it builds on is wrong (its attention called your scale_scores,"
        " and recomputed with your own pieces it reproduces the failure, and it is right once the wrong pieces are):"
        ' "carry_forward" keeps its points and says it is correct once that function is fixed (one mistake costs'
        ' its own points once); "deduct" takes them as any failure. A failure with a cause of its own never keeps'
        " points (docs/grading.md)",
        choices=("carry_forward", "deduct"),
    )


@dataclass(frozen=True)
class Lesson:
    """[lesson]: the lesson's example shapes, graded by sdpa_lesson_shape and written by ``sdpa-build`` into the
    handout, the public tests and the knowledge check (autograder/release/lesson.py)."""

    ABOUT: ClassVar[str] = (
        "The lesson's example: queries (batch, sequence, d_k), keys (batch, sequence, d_k) and values (batch,"
        " sequence, d_v) give weights (batch, sequence, sequence) and an output (batch, sequence, d_v). The hidden"
        " check sdpa_lesson_shape grades these shapes; sdpa-build writes them into the handout, the public tests and"
        " the notebook's knowledge check (sdpa-build --config FILE builds them with a course's own)."
    )

    batch: int = setting("the batch size")
    sequence: int = setting("the length of the queries' sequence, and of the keys'")
    key_sequence: int = setting(
        "the keys' length in the knowledge check's question on the scores' shape (unlike sequence, so that T_q and T_k"
        " are told apart)"
    )
    d_k: int = setting("the width of a query and of a key")
    d_v: int = setting("the width of a value, and of the output")


@dataclass(frozen=True)
class Parts:
    """[parts]: the assignment's optional parts, each a function of the reference that is handed out and graded only
    where its part is on (autograder/assignment/parts.py)."""

    ABOUT: ClassVar[str] = (
        "Optional parts: a function of the reference that students write, and the grader grades, only where its key"
        " is true. Off, nothing of it is handed out (stub, notebook cell, handout section) or graded (its checks,"
        " their points). Build the hand-out with the same file (sdpa-build --config FILE) as you grade with."
    )

    blockwise_attention: bool = setting(
        "blockwise_attention(Q, K, V, mask, is_causal, block_size): the attention's output computed one block of keys"
        " at a time with a running maximum, sum and output (the online softmax), graded for its values, stability,"
        " gradients and integrity, and for never building the (T_q, T_k) matrix (measured in the grader's worker)"
    )
    decoding: bool = setting(
        "grouped_query_attention(Q, K, V, mask, is_causal), KVCache(max_len) and attend_with_cache(Q_new, K_new, V_new,"
        " cache, mask): decoding one token or chunk at a time against a cache of past keys and values, with key/value"
        " heads shared by groups of query heads, graded against F.scaled_dot_product_attention(enable_gqa=True) and"
        " the full causal pass"
    )

    # a part whose key is not the name of its one function: the functions it hands out
    FUNCTIONS: ClassVar[dict[str, tuple[str, ...]]] = {
        "decoding": ("grouped_query_attention", "KVCache", "attend_with_cache"),
    }

    @classmethod
    def functions(cls, part: str) -> tuple[str, ...]:
        """The functions of the reference that the part ``part`` (a key of [parts]) hands out and grades."""
        return cls.FUNCTIONS.get(part, (part,))

    def off(self) -> frozenset[str]:
        """The functions whose part is off."""
        return frozenset(
            name for f in dataclasses.fields(self) if not getattr(self, f.name) for name in self.functions(f.name)
        )


@dataclass(frozen=True)
class Lti:
    """[lti]: the LMS that ``sdpa-grade push`` sends the class's final scores to, by LTI 1.3 Assignment and Grade
    Services (autograder/course/lti.py, docs/lti.md). It decides no grade: its keys are not part of the settings'
    digest, so changing them grades nothing again."""

    GRADES: ClassVar[bool] = False
    ABOUT: ClassVar[str] = (
        "The LMS that sdpa-grade push sends the class's final scores to, by LTI 1.3 Assignment and Grade Services"
        " (docs/lti.md says where Canvas and Moodle show each value). Empty, push refuses to run. Web addresses are"
        " HTTPS, except on this machine (127.0.0.1, localhost, ::1)."
    )

    issuer: str = setting("the platform's issuer (iss), as the LMS shows it when the tool is registered")
    client_id: str = setting("the tool's client id in the LMS (Canvas: the developer key's id)")
    deployment_id: str = setting("the tool's deployment id in the LMS")
    token_url: str = setting("the platform's OAuth 2 access token URL", url=True)
    memberships_url: str = setting(
        "the course's Names and Role Provisioning Services context membership URL (its learners and their ids)",
        url=True,
    )
    lineitems_url: str = setting("the course's Assignment and Grade Services line items URL", url=True)
    key_path: str = setting(
        "the tool's RS256 private key (PEM), readable by its owner only; its public JWK is registered in the LMS"
    )
    line_item_label: str = setting("the gradebook column's title, given when push creates it")
    resource_id: str = setting(
        "the line item's resourceId: push finds the column by it, and creates it only where none has it"
    )
    identity: str = setting(
        "what names a class's student (their folder's name) in the platform's membership: email (Canvas and Moodle"
        " send it where their privacy settings share it), sis_id (lis_person_sourcedid: Canvas's SIS id, Moodle's ID"
        " number) or login (login_id, ext_user_username or username: neither Canvas nor Moodle sends one); the whole"
        " value is compared (e-mail without case). A field the platform does not send is refused before any column is"
        " created",
        choices=("login", "email", "sis_id"),
    )
    timeout: float = setting(
        "seconds one request to the platform may take, its whole answer included (an answer trickled a piece at a time"
        " is given up once they are spent)"
    )
    retries: int = setting(
        "times a request the platform did not answer, or answered 429 or 5xx, is tried again: after the Retry-After it"
        " asks (at most retry_after_max), else after 1, 2, 4 s; a score tried again carries a newer timestamp",
        zero=True,
    )
    retry_after_max: float = setting(
        "the longest wait a platform's Retry-After is granted, seconds: asked to wait longer, the request fails"
    )
    budget: float = setting(
        "seconds a whole push may take, by the wall clock: once they are spent no request is begun, and each student"
        " not sent is listed (push again to send them: a score the platform already holds is not sent again)"
    )
    failures_in_a_row: int = setting(
        "scores in a row the platform does not answer (or answers 429 or 5xx, after their retries) before the push"
        " stops, listing each student not sent",
        minimum=1,
    )


@dataclass(frozen=True)
class Record:
    """[record]: the grade of record (autograder/course/decisions.py, docs/instructor.md "The grade of record"). It
    decides no score: its keys are not part of the settings' digest."""

    GRADES: ClassVar[bool] = False
    ABOUT: ClassVar[str] = (
        "The grade of record: what sdpa-grade batch holds out of every export (the CSV, Canvas's and Moodle's files,"
        " sdpa-grade push) until the instructor clears it (sdpa-grade clear DIR STUDENT)."
    )

    hold_flagged: bool = setting(
        "hold flagged work (an integrity flag, no submission time, an ungradable submission, a grader error) out of"
        " every export until it is cleared (true), or export it as graded (false)"
    )


# The sections, in defaults.toml's order. [deadline] is declared and checked in deadline.py (dates and a table of
# extensions, not numbers and words). [points] is not among them: its keys are the hidden checks' names, each a
# non-negative number; each check declares its own points in its marker (assignment/catalogue reads them), and [points]
# only overrides them, in defaults.toml or a course's file.
SECTIONS: dict[str, type] = {
    "tolerance": Tolerance, "timing": Timing, "limits": Limits, "imports": Imports, "gradescope": Gradescope,
    "scoring": Scoring, "lesson": Lesson, "parts": Parts, "lti": Lti, "record": Record,
}  # fmt: skip


@dataclass(frozen=True)
class Settings:
    """The resolved settings, one typed record per section, and where they came from."""

    points: Mapping[str, float]
    tolerance: Tolerance
    timing: Timing
    limits: Limits
    imports: Imports
    gradescope: Gradescope
    scoring: Scoring
    lesson: Lesson
    parts: Parts
    lti: Lti
    record: Record
    source: str = "defaults"
    deadline: Deadline = Deadline()

    def replace(self, section: str, **changes) -> Settings:
        """These settings with some keys of one section changed (``require_sandbox`` from a command-line flag),
        validated as a file's would be."""
        current = getattr(self, section)
        for key, value in changes.items():
            _check(SECTIONS[section], key, value, f"Invalid {section}.{key} {value!r}")
        return dataclasses.replace(self, **{section: dataclasses.replace(current, **changes)})

    def for_check(self, check: str) -> Settings:
        """These settings as one check reads them: its [tolerance.<check>] table, if any, in place of [tolerance]'s
        keys (the checks' ``settings`` fixture gives each check its own)."""
        tolerance = self.tolerance.for_check(check)
        return self if tolerance is self.tolerance else dataclasses.replace(self, tolerance=tolerance)


def _read(path: Path, where: str) -> dict:
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        raise ConfigError(f"config file {path} from {where} does not exist") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"config file {path} from {where} is not valid TOML: {error}") from None


def _declared(section: type) -> dict[str, tuple[type, dict]]:
    """key -> (type, declaration) of one section's dataclass: its keys, not its tables ([tolerance.<check>])."""
    hints = typing.get_type_hints(section)
    return {f.name: (hints[f.name], f.metadata) for f in dataclasses.fields(section) if not f.metadata.get("table")}


def _check(section: type, key: str, value, label: str) -> None:
    kind, rule = _declared(section)[key]
    if kind is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{label}: expected true or false")
        return
    if kind is str:
        if rule["choices"] and value not in rule["choices"]:
            raise ConfigError(f"{label}: expected one of {', '.join(rule['choices'])}")
        if not isinstance(value, str):
            raise ConfigError(f"{label}: expected a text in quotes")
        if rule["url"] and value:
            problem = url_problem(value)
            if problem:
                raise ConfigError(f"{label}: {problem}")
        return
    if kind == tuple[str, ...]:
        if not isinstance(value, (list, tuple)) or not all(
            isinstance(name, str) and name.isidentifier() for name in value
        ):
            raise ConfigError(f'{label}: expected a list of top-level module names, such as ["torch", "numpy"]')
        missing = [name for name in rule["needs"] if name not in value]
        if missing:
            raise ConfigError(f"{label}: must include {', '.join(missing)}")
        return
    _check_number(value, label, whole=kind is int, zero=rule["zero"], minimum=rule["minimum"])


LOOPBACK = ("127.0.0.1", "localhost", "::1")


def url_problem(url: str) -> str:
    """Why ``url`` may not be used to reach a platform ("" when it may): an https address, or http on this machine
    (LOOPBACK) only, so that keys and grades never cross a network in the clear."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError as error:
        return f"not a web address ({error})"
    if parts.scheme not in ("https", "http") or not host:
        return "expected a web address, https://host/..."
    if parts.scheme == "http" and host not in LOOPBACK:
        return f"expected https:// (http is taken only on this machine: {', '.join(LOOPBACK)})"
    return ""


def _check_number(value, label: str, *, whole: bool, zero: bool, minimum: float | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{label}: expected a number")
    if whole and not isinstance(value, int):
        raise ConfigError(f"{label}: expected a whole number")  # a count: 7.5 rounds cannot be run
    if value < 0 or (value == 0 and not zero):
        raise ConfigError(f"{label}: expected a {'non-negative' if zero else 'positive'} number")
    if minimum is not None and value < minimum:
        raise ConfigError(f"{label}: expected at least {minimum:g}")


def _validate(overrides: dict, defaults: dict, where: str) -> None:
    for section, table in overrides.items():
        if section not in defaults or not isinstance(table, dict):
            raise ConfigError(f"unknown section [{section}] in {where}; known: {', '.join(defaults)}")
        if section == "deadline":
            try:
                parse_deadline(table, where)
            except DeadlineError as error:
                raise ConfigError(str(error)) from None
            continue
        for key, value in table.items():
            if section == "tolerance" and isinstance(value, dict):
                _check_tolerance_table(key, value, where)
                continue
            if key not in defaults[section]:
                import difflib

                near = difflib.get_close_matches(str(key), list(defaults[section]), n=1)
                hint = f"; did you mean {section}.{near[0]}?" if near else ""
                raise ConfigError(f"unknown setting {section}.{key} in {where}{hint}")
            label = f"Invalid {section}.{key} {value!r} from {where}"
            if section == "points":
                _check_number(value, label, whole=False, zero=True)  # half points, and checks worth nothing
            else:
                _check(SECTIONS[section], key, value, label)


def _check_tolerance_table(check: str, table: dict, where: str) -> None:
    """A [tolerance.<check>] table: a check that compares within the tolerance, each key a dtype's atol or rtol, each
    value as [tolerance] declares that key."""
    import difflib

    known = tolerance_checks()
    if check not in known:
        near = difflib.get_close_matches(check, known, n=1)
        hint = f"; did you mean [tolerance.{near[0]}]?" if near else f"; known: {', '.join(known)}"
        raise ConfigError(
            f"unknown check [tolerance.{check}] in {where}: a [tolerance.<check>] table names a check that compares"
            f" values within the tolerance{hint}"
        )
    for key, value in table.items():
        if key not in CHECK_TOLERANCE_KEYS:
            raise ConfigError(
                f"unknown setting tolerance.{check}.{key} in {where}; a check's own tolerance sets"
                f" {', '.join(CHECK_TOLERANCE_KEYS)}"
            )
        _check(Tolerance, key, value, f"Invalid tolerance.{check}.{key} {value!r} from {where}")


def _build(values: dict, source: str) -> Settings:
    """The typed settings from checked values (a float setting given as 7 becomes 7.0)."""
    sections = {}
    for name, section in SECTIONS.items():
        table = {key: _typed(kind, values[name][key]) for key, (kind, _) in _declared(section).items()}
        if section is Tolerance:  # the [tolerance.<check>] tables, in the checks' order
            own = {check: values[name][check] for check in tolerance_checks() if check in values[name]}
            table["checks"] = {check: {key: float(own[check][key]) for key in sorted(own[check])} for check in own}
        sections[name] = section(**table)
    deadline = parse_deadline(values["deadline"], source)
    off = sections["parts"].off()  # a part turned off is not graded: its checks have no points to count
    function = {entry.check: entry.function for entry in catalogue()} if off else {}
    points = {check: worth for check, worth in values["points"].items() if function.get(check) not in off}
    return Settings(MappingProxyType(points), **sections, source=source, deadline=deadline)


def _typed(kind: type, value):
    """A checked value as its declared type: a float setting given as 7 is 7.0, a list of names a tuple."""
    if kind is float:
        return float(value)
    if kind == tuple[str, ...]:
        return tuple(value)
    return value


def load_settings(path: str | Path | None = None, environ: dict | None = None) -> Settings:
    """Resolve the settings: command line file > environment file > defaults."""
    environ = os.environ if environ is None else environ
    defaults = _read(DEFAULTS, "the defaults")
    shipped = defaults.pop("points", {})  # overrides of the checks' own points, as a course's file may hold them
    defaults = {"points": declared_points(), **defaults}
    _validate({"points": defaults["points"]}, defaults, f"{CHECKS} (the checks' markers)")
    _validate({**defaults, "points": shipped}, defaults, f"{DEFAULTS} (the defaults)")
    defaults["points"].update(shipped)
    values = {section: dict(table) for section, table in defaults.items()}
    if path is not None:
        where, chosen = "--config", Path(path)
    elif environ.get(ENV_VAR):
        where, chosen = ENV_VAR, Path(environ[ENV_VAR])
    else:
        return _build(values, "defaults")
    overrides = _read(chosen, where)
    _validate(overrides, defaults, f"{chosen} ({where})")
    for section, table in overrides.items():
        values[section].update(table)  # [deadline.extensions], a table, is replaced whole: the course's own list
    return _build(values, f"{chosen} ({where})")
