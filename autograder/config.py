"""Grading settings: declared once, with their types and bounds; resolved and validated in one place.

Each section of defaults.toml is one frozen dataclass below: a field per key, its type, its
bounds (whether zero is allowed, a minimum, the choices) and a one-line help. The values
themselves live in defaults.toml, the file an instructor copies (and a test checks that the
two name the same keys). Precedence, highest first: ``--config FILE`` on the command line, the
``SDPA_GRADE_CONFIG`` environment variable, the defaults shipped beside this file. A file may
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

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from autograder.checks.catalogue import CHECKS
from autograder.checks.catalogue import points as declared_points
from autograder.deadline import Deadline, DeadlineError
from autograder.deadline import parse as parse_deadline

DEFAULTS = Path(__file__).with_name("defaults.toml")
ENV_VAR = "SDPA_GRADE_CONFIG"
DTYPES = ("float64", "float32", "float16", "bfloat16")


class ConfigError(ValueError):
    """A setting that cannot be used, with the place it came from."""


def setting(
    help: str,
    *,
    zero: bool = False,
    minimum: float | None = None,
    choices: tuple[str, ...] = (),
    needs: tuple[str, ...] = (),
):
    """A key's declaration: what it means, whether 0 means something (no time or memory does not; no retry
    does), the least value that can work, for a word the words allowed, and for a list of names the names it
    must hold. Its type is the field's."""
    return field(metadata={"help": help, "zero": zero, "minimum": minimum, "choices": choices, "needs": needs})


@dataclass(frozen=True)
class Tolerance:
    """[tolerance]: how far a student's value may be from the reference's (docs/grading.md).

    Called, it gives a dtype's (atol, rtol): ``settings.tolerance("float32", scale=size)``."""

    float64_atol: float = setting("absolute tolerance for float64 results")
    float64_rtol: float = setting("relative tolerance for float64 results")
    float32_atol: float = setting("absolute tolerance for float32 results")
    float32_rtol: float = setting("relative tolerance for float32 results")
    float16_atol: float = setting("absolute tolerance for float16 results")
    float16_rtol: float = setting("relative tolerance for float16 results")
    bfloat16_atol: float = setting("absolute tolerance for bfloat16 results")
    bfloat16_rtol: float = setting("relative tolerance for bfloat16 results")
    float64_scale_rtol: float = setting("float64: added to atol per unit of the inputs' size", zero=True)
    float32_scale_rtol: float = setting("float32: added to atol per unit of the inputs' size", zero=True)
    float16_scale_rtol: float = setting("float16: added to atol per unit of the inputs' size", zero=True)
    bfloat16_scale_rtol: float = setting("bfloat16: added to atol per unit of the inputs' size", zero=True)
    gradient_factor: float = setting("gradients' tolerance is this many times the values'", minimum=1.0)
    variance_rtol: float = setting("dot_product_variance must land within this fraction of d_k")

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


@dataclass(frozen=True)
class Timing:
    """[timing]: the timing checks' budget and how they measure it (docs/performance.md)."""

    budget: float = setting(
        "the student's attention may take at most this many times the reference's time", minimum=1.0
    )
    rounds: int = setting("interleaved measurements, shared among the three call forms")
    retries: int = setting("times a failing measurement is repeated before the check fails", zero=True)
    when_no_gpu: str = setting("the GPU timing check without a CUDA device", choices=("exclude", "award", "fail"))


@dataclass(frozen=True)
class Limits:
    """[limits]: what the student's code may take, per call and per sandbox (docs/security.md).

    The sandbox side (autograder/sandbox) reads these as plain values (``dataclasses.asdict``): it imports
    nothing of the grader's."""

    call_timeout: float = setting("seconds of the student's own time one call may take")
    after_hang_timeout: float = setting("seconds every later call gets once any call has hung")
    load_timeout: float = setting("seconds the submission may take to load")
    check_timeout: float = setting("seconds for a whole check (pytest-timeout), above the per-call limit")
    grading_budget: float = setting(
        "seconds a whole grading may take by the wall clock; then every check still to run fails as a time-out"
    )
    memory_mb: int = setting("memory cap of the submission's processes, MiB", minimum=1024)
    output_kb: int = setting("what student code may print, KiB; the rest is dropped")
    processes: int = setting("processes (and threads) the submission may have at once")
    tmp_mb: int = setting("size of each of the sandbox's private /tmp and /dev/shm, MiB")
    tmp_inodes: int = setting("files each of the sandbox's private /tmp and /dev/shm may hold")
    reply_mb: int = setting("the most one answer from the worker may carry, MiB")
    busy_factor: float = setting(
        "a call the machine's load stretches past this many times its limit is the grader's error", minimum=1.0
    )
    require_sandbox: bool = setting("refuse to grade where namespaces, Landlock or seccomp are missing")
    folder_depth: int = setting("levels of folders searched for the graded file below the submission's own")
    folder_files: int = setting("files and folders the search for the graded file looks at, in all")
    notebook_mb: int = setting("the largest notebook (.ipynb) read, MiB; a larger one is ungradable", minimum=1)
    notebook_depth: int = setting(
        "how deep a notebook's JSON may nest; deeper is ungradable, checked before decoding", minimum=8
    )
    notebook_containers: int = setting(
        "the most JSON lists and objects a notebook may hold; more is ungradable, counted before decoding", minimum=1000
    )
    source_kb: int = setting(
        "the most code graded (attention.py, or a notebook's code cells), KiB; more is ungradable", minimum=16
    )
    answer_chars: int = setting(
        "the longest knowledge-check answer cell read, characters; a longer one is not read", minimum=100
    )


@dataclass(frozen=True)
class Imports:
    """[imports]: what a submission may import besides Python's standard library (docs/instructor.md).

    The sandbox side reads it as plain values, as it reads [limits]: the worker refuses any other import made by the
    submission's code, and the sandbox lets it read only these packages and what they need (docs/security.md)."""

    allowed: tuple[str, ...] = setting(
        "top-level modules a submission may import besides the standard library (torch among them)", needs=("torch",)
    )


@dataclass(frozen=True)
class Gradescope:
    """[gradescope]: what the Gradescope bundle's results.json shows students."""

    visibility: str = setting(
        "when students see the hidden checks' results on Gradescope (after_due_date also hides the total until then)",
        choices=("visible", "after_due_date", "after_published"),
    )


@dataclass(frozen=True)
class Scoring:
    """[scoring]: how points follow from the checks' outcomes (docs/grading.md, "Error carried forward")."""

    borrowed: str = setting(
        "a check that fails only because a function it builds on is wrong: keeps its points, or loses them",
        choices=("carry_forward", "deduct"),
    )


# The sections, in defaults.toml's order. [deadline] is declared and checked in deadline.py (dates and a table of
# extensions, not numbers and words). [points] is not among them: its keys are the hidden checks' names, each a
# non-negative number; each check declares its own points in its marker (checks/catalogue.py reads them), and [points]
# only overrides them, in defaults.toml or a course's file.
SECTIONS: dict[str, type] = {
    "tolerance": Tolerance, "timing": Timing, "limits": Limits, "imports": Imports, "gradescope": Gradescope,
    "scoring": Scoring,
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
    source: str = "defaults"
    deadline: Deadline = Deadline()

    def replace(self, section: str, **changes) -> Settings:
        """These settings with some keys of one section changed (``require_sandbox`` from a command-line flag),
        validated as a file's would be."""
        current = getattr(self, section)
        for key, value in changes.items():
            _check(SECTIONS[section], key, value, f"Invalid {section}.{key} {value!r}")
        return dataclasses.replace(self, **{section: dataclasses.replace(current, **changes)})


def _read(path: Path, where: str) -> dict:
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        raise ConfigError(f"config file {path} from {where} does not exist") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"config file {path} from {where} is not valid TOML: {error}") from None


def _declared(section: type) -> dict[str, tuple[type, dict]]:
    """key -> (type, declaration) of one section's dataclass."""
    hints = typing.get_type_hints(section)
    return {f.name: (hints[f.name], f.metadata) for f in dataclasses.fields(section)}


def _check(section: type, key: str, value, label: str) -> None:
    kind, rule = _declared(section)[key]
    if kind is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{label}: expected true or false")
        return
    if kind is str:
        if value not in rule["choices"]:
            raise ConfigError(f"{label}: expected one of {', '.join(rule['choices'])}")
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


def _build(values: dict, source: str) -> Settings:
    """The typed settings from checked values (a float setting given as 7 becomes 7.0)."""
    sections = {}
    for name, section in SECTIONS.items():
        table = {key: _typed(kind, values[name][key]) for key, (kind, _) in _declared(section).items()}
        sections[name] = section(**table)
    deadline = parse_deadline(values["deadline"], source)
    return Settings(MappingProxyType(dict(values["points"])), **sections, source=source, deadline=deadline)


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
