"""What made a grade: the graded file and its SHA-256, the hidden checks, the settings, the grader, when.

Every results file carries this record under ``extra_data.provenance`` (``record``), on every path. A grade is
a function of the graded file, the checks and the settings alone (SPEC, invariant 9), so the record is what a
batch compares with today to grade again only what changed (``stale``), and what a merge of shards compares
across results before it adds them up. Digests are SHA-256, in hex:

- ``checks_sha256``: of one line ``<path> <sha256 of the file>`` per file that decides a check, sorted by path:
  ``autograder/checks/*.py``, ``autograder/checks/pytest.ini`` and ``reference/attention.py`` (the checks
  compare with it); each file's own digest is kept in ``check_files``;
- ``grader_sha256``: the same, of every file of the installed grader that decides a grade: every ``*.py``,
  ``*.toml`` and ``*.ini`` of ``autograder/`` (the reader, the sandbox and its worker, the checks, scoring, the
  report) and ``reference/attention.py``; a change anywhere there regrades (``GRADER``);
- ``settings_sha256``: of the resolved settings (``settings_record``: every section, every key, numbers as
  floats) as canonical JSON (sorted keys, no spaces). Where they came from (``settings_from``) is not part of
  it: the defaults written out in a file are the defaults.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import importlib.util
import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from autograder.config import SECTIONS, Settings, load_settings
from autograder.read.handed_in import HandedIn, take

PACKAGE = Path(__file__).resolve().parent  # autograder/
CHECKS = PACKAGE / "checks"

# Why a result is graded again, in the order they are looked for (a result is counted under the first that holds)
NO_RECORD = "no provenance"  # graded by a grader that did not record what it graded
FILE = "file changed"
CHECKS_CHANGED = "checks changed"
GRADER = "grader changed"  # the checks are the same, another file that decides a grade is not
SETTINGS = "settings changed"
DEVICE = "device changed"
REASONS = (NO_RECORD, FILE, CHECKS_CHANGED, GRADER, SETTINGS, DEVICE)
GRADER_SUFFIXES = (".py", ".toml", ".ini")


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def check_files() -> dict[str, str]:
    """Each file that decides a check, by its path from the project's root, -> its SHA-256; sorted by path."""
    reference = Path(importlib.util.find_spec("reference.attention").origin)
    files = [*CHECKS.glob("*.py"), CHECKS / "pytest.ini"]
    named = {path.relative_to(PACKAGE.parent).as_posix(): path for path in files}
    named["reference/attention.py"] = reference
    return {name: _sha256(named[name].read_bytes()) for name in sorted(named)}


def checks_sha256(files: dict[str, str] | None = None) -> str:
    return _digest_of(check_files() if files is None else files)


def _digest_of(files: dict[str, str]) -> str:
    return _sha256("".join(f"{name} {digest}\n" for name, digest in sorted(files.items())).encode())


def grader_sha256() -> str:
    """The digest of the whole installed grader: every file of ``autograder/`` that decides a grade (``*.py``,
    ``*.toml``, ``*.ini``; not its pages' templates), and the reference, each by its path from the project's root."""
    files = [path for path in PACKAGE.rglob("*") if path.suffix in GRADER_SUFFIXES and "__pycache__" not in path.parts]
    named = {path.relative_to(PACKAGE.parent).as_posix(): path for path in files}
    named["reference/attention.py"] = Path(importlib.util.find_spec("reference.attention").origin)
    return _digest_of({name: _sha256(path.read_bytes()) for name, path in named.items()})


def settings_record(settings: Settings) -> dict:
    """The resolved settings as plain data: every section's keys, numbers as floats (2 and 2.0 are one setting);
    not a section that decides no grade (``GRADES = False``: [lti])."""
    record = {"points": {name: float(points) for name, points in settings.points.items()}}
    for section in (name for name, declared in SECTIONS.items() if getattr(declared, "GRADES", True)):
        values = dataclasses.asdict(getattr(settings, section))
        record[section] = {
            k: float(v) if isinstance(v, int) and not isinstance(v, bool) else v for k, v in values.items()
        }
    return record


def settings_sha256(settings: Settings) -> str:
    canonical = json.dumps(settings_record(settings), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return _sha256(canonical.encode())


def version() -> str:
    try:
        return importlib.metadata.version("sdpa-assignment")
    except importlib.metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown"


def utc_now() -> str:
    """Now, in UTC, as ISO 8601 to the second: 2026-12-01T23:40:00Z."""
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def relative(submission: Path | tuple[Path, ...], file: Path | None) -> str | None:
    """The graded file's path as the submission holds it: from the student's folder, or the file's own name (also
    for a batch's top-level files that share a name, a tuple)."""
    if file is None:
        return None
    if isinstance(submission, tuple):
        return file.name
    if submission.is_dir() and not submission.is_symlink():
        try:
            return file.relative_to(submission).as_posix()
        except ValueError:
            return file.as_posix()
    return file.name


def record(grading) -> dict:
    """A grading's provenance (``grade.Grading``: its read stage's file and SHA-256, its settings and device)."""
    graded = relative(grading.submission, grading.graded)
    stages = {"stages": list(grading.stages)} if getattr(grading, "stages", ()) else {}  # the pipeline that ran
    return {**_record(graded, grading.sha256, grading.graded_at, grading.settings, grading.device), **stages}


def failed(settings: Settings, device: str) -> dict:
    """The provenance of a grading that failed before its read stage said what it read: no file, no SHA-256."""
    return _record(None, None, utc_now(), settings, device)


def _record(graded: str | None, sha256: str | None, graded_at: str, settings: Settings, device: str) -> dict:
    files = check_files()
    return {
        "graded_file": graded,
        "sha256": sha256,
        "graded_at": graded_at,
        "grader_version": version(),
        "device": device,
        "checks_sha256": checks_sha256(files),
        "grader_sha256": grader_sha256(),
        "settings_sha256": settings_sha256(settings),
        "settings_from": settings.source,
        "check_files": files,
        "settings": settings_record(settings),
    }


def of(result: dict | None) -> dict:
    """A result's provenance ({} for a result written before it was recorded, or by the grader's own failure)."""
    extra = (result or {}).get("extra_data")
    found = extra.get("provenance") if isinstance(extra, dict) else None
    return found if isinstance(found, dict) else {}


@dataclass(frozen=True)
class Now:
    """What a grading started now would record, but for the file: the checks, the settings, the device."""

    checks_sha256: str
    grader_sha256: str
    settings_sha256: str
    device: str


def now(settings: Settings, device: str) -> Now:
    return Now(checks_sha256(), grader_sha256(), settings_sha256(settings), device)


def stale(result: dict, handed: HandedIn | Path | tuple[Path, ...], today: Now) -> str:
    """Why ``result`` is not what grading the submission now would give (one of ``REASONS``), or "" when it is.

    The file it would grade now, and its SHA-256, are the gate's record of it (``handed``, or read now from a path):
    the same rule and the same bytes as a grading, with nothing of the file parsed."""
    found = of(result)
    if not found.get("checks_sha256") or not found.get("settings_sha256"):
        return NO_RECORD
    if not isinstance(handed, HandedIn):
        handed = take(handed, load_settings(environ={}).limits)
    if (found.get("graded_file"), found.get("sha256")) != (handed.relative, handed.sha256):
        return FILE
    if found["checks_sha256"] != today.checks_sha256:
        return CHECKS_CHANGED
    if found.get("grader_sha256") != today.grader_sha256:  # a result from before it was recorded: graded again
        return GRADER
    if found["settings_sha256"] != today.settings_sha256:
        return SETTINGS
    if found.get("device") != today.device:
        return DEVICE
    return ""


def grouping(result: dict) -> tuple[str, str]:
    """What results must share to be added up: (checks digest, settings digest); "" where a result does not say."""
    found = of(result)
    return str(found.get("checks_sha256", "")), str(found.get("settings_sha256", ""))
