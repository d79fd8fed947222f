"""The gate: what a student hands in enters the trusted side here, once, into one record (``HandedIn``).

A submission (a file, a student's folder, a batch folder's files of one name) is read by ``take``: the graded file
chosen by the one rule (submission.choose, names compared as the students' file systems compare them), its bytes
read once with their bounds (only a regular file, never through a link) and hashed. A class folder is listed by
``listing`` (every entry of the folder accounted for: a student, or skipped with its reason) and its students read by
``read_class``, in one trip: each student's record taken, and its submission time taken only from a source the student
cannot write (``with_time``).

Every later step takes the record: the read stage (grade.read makes its bytes into source), staleness
(provenance.stale compares its file and SHA-256), deadlines (its time), similarity (its bytes), the batch's
listing and summary (its entries). None of them opens the student's folder again. Nothing here raises for what a
student handed in: a refusal is the record's ``refused``, that student's alone.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

from autograder.assignment.deadline import TIMESTAMP, Deadline, gradescope_time, parse_nbgrader_timestamp
from autograder.assignment.paths import NOTEBOOK
from autograder.config import Limits, load_settings
from autograder.read import bounded
from autograder.read.submission import Choice, Submitted, Ungradable, _walk, choose, folded, read_bytes, source_of


@dataclass(frozen=True)
class HandedIn:
    """One submission as the gate read it: the graded file and every other candidate (``choice``), its bytes and
    SHA-256, or why it could not be read; and, in a class, its submission time and where that came from."""

    submission: Path | tuple[Path, ...]
    choice: Choice | None = None  # None: no file was chosen (a folder with nothing to grade)
    data: bytes | None = None  # the graded file's bytes, None where they were not read
    sha256: str | None = None
    refused: str = ""  # why it cannot be graded ("" when its bytes were read)
    missing: bool = False  # nothing to read at its path: more likely a wrong path than the student's mistake
    submitted_at: datetime | None = None
    time_from: str = ""  # where the time came from: one of TIME_SOURCES, "" where there is none
    time_problem: str = ""  # why a time found was not used (the student is flagged where a deadline needs it)

    @property
    def file(self) -> Path | None:
        return self.choice.path if self.choice is not None else None

    @property
    def relative(self) -> str | None:
        """The graded file's path as the submission holds it (provenance records it), None where none was chosen."""
        return self.choice.relative if self.choice is not None else None

    def refusal(self) -> Ungradable | None:
        """The refusal as the read stage raises it, with the file and SHA-256 that provenance records."""
        if not self.refused:
            return None
        reason = Ungradable(self.refused, missing=self.missing)
        reason.file, reason.sha256 = self.file, self.sha256
        return reason


def take(submission: Path | tuple[Path, ...] | Choice, limits: Limits) -> HandedIn:
    """The record of one submission: the one rule's choice, and the chosen file's bytes and SHA-256 read once."""
    choice = submission if isinstance(submission, Choice) else None
    given = choice.root if choice is not None else submission
    try:
        choice = choice or choose(submission, limits)
    except Ungradable as reason:
        return HandedIn(given, refused=str(reason), missing=reason.missing)
    try:
        data, digest = read_bytes(choice.root, choice.path, limits)
    except Ungradable as reason:
        exists = choice.path.exists() or choice.path.is_symlink()
        return HandedIn(given, choice if exists else None, refused=str(reason), missing=reason.missing)
    return HandedIn(given, choice, data, digest)


def read_submission(submission: Choice | Path, folder: Path, limits: Limits | None = None) -> Submitted:
    """Write the graded file's Python source to ``folder/attention.py``; return it with the file it came from.

    ``submission`` is the rule's choice (``choose``), or a path, chosen under ``limits``; it is read through the
    gate (``handed_in.take``) and its bytes made into source (``source_of``). A submission that cannot be read or
    graded raises Ungradable, carrying the chosen file (and its SHA-256 when its bytes were read)."""
    limits = load_settings(environ={}).limits if limits is None else limits
    handed = take(submission, limits)
    return source_of(handed.data, handed.file, handed.sha256, handed.refusal(), folder, limits)


# Left in every folder a batch writes (results, feedback pages): a later batch over the folder above takes such a
# folder for the grader's output, not for a student, but only where it holds nothing the one rule could grade (a
# student's upload with a file of this name is a student's, graded like any other).
MARKER = ".sdpa-grade-output"
SUFFIXES = (".py", ".ipynb")


@dataclass(frozen=True)
class ClassFolder:
    """A class folder's entries, every one accounted for: the students (name -> submission, as ``take`` reads it)
    and the entries that are not one, each with why (``skipped``: entry name -> reason)."""

    students: dict[str, Path | tuple[Path, ...]]
    skipped: dict[str, str]


def listing(folder: Path, limits: Limits) -> ClassFolder:
    """Every subfolder and every .py and .ipynb file at the top of ``folder``, by student name.

    Files at the top that share a name (``alice.py`` + ``alice.ipynb``) are one student, a tuple of them: which is
    graded is the one rule's choice. A file whose stem is also a folder's name (``x.py`` beside ``x/``) keeps its
    whole name, so that neither is dropped. Symbolic links are kept here and refused when read (``take``). Hidden
    entries, other files, and folders that an earlier batch wrote are skipped, each with its reason.
    """
    students: dict[str, Path | tuple[Path, ...]] = {}
    skipped: dict[str, str] = {}
    entries = []
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith("."):
            skipped[entry.name] = "a hidden entry (its name starts with '.')"
        elif entry.is_dir() and _is_output(entry, limits):
            skipped[entry.name] = "written by sdpa-grade (results or feedback pages; it holds no submission)"
        elif not entry.is_dir() and folded(entry.suffix) not in SUFFIXES:
            skipped[entry.name] = "neither a folder, a .py file nor a notebook (.ipynb)"
        else:
            entries.append(entry)
    folders = {entry.name for entry in entries if entry.is_dir()}
    named: dict[str, list[Path]] = {}
    for entry in entries:
        if not entry.is_dir():
            named.setdefault(entry.stem, []).append(entry)
    grouped = set()  # the stems whose files are a student already
    for entry in entries:
        if entry.is_dir():
            students[entry.name] = entry
        elif entry.stem in grouped:
            continue
        elif entry.stem in folders or entry.stem in students:
            students[entry.name] = entry
        else:
            group = named[entry.stem]
            students[entry.stem] = group[0] if len(group) == 1 else tuple(group)
            grouped.add(entry.stem)
    return ClassFolder(students, skipped)


def _is_output(entry: Path, limits: Limits) -> bool:
    """A folder an earlier batch wrote: it holds the marker and nothing the one rule could grade."""
    if entry.is_symlink() or not (entry / MARKER).is_file():
        return False
    found, stopped = _walk(entry, limits.folder_depth, limits.folder_files)
    return not found and stopped is None  # a search a bound stopped is a student's: ungradable, the bound named


ASSIGNMENT = NOTEBOOK.parent.name  # the nbgrader assignment's id: its source folder's name (sdpa)
# Where a submission time may come from: only what the student cannot write
TIMES_FILE, NBGRADER = "--times", "nbgrader's timestamp.txt"
UNTRUSTED = (
    "no trusted submission time: --times has no row for this student, and the class folder is not an nbgrader"
    " course's submitted/ folder (a time file inside a student's own upload is never believed)"
)


def collected_by_nbgrader(folder: Path) -> bool:
    """``folder`` is an nbgrader course's ``submitted/`` folder, which only ``nbgrader collect`` writes: its
    ``<student>/<assignment>/timestamp.txt`` is nbgrader's own record of the submission's time."""
    course = folder.resolve().parent
    return folder.name == "submitted" and any((course / name).is_file() for name in ("nbgrader_config.py",
                                                                                      "gradebook.db"))  # fmt: skip


def with_time(handed: HandedIn, name: str, times: dict[str, datetime], collected: bool) -> HandedIn:
    """The record with its submission time from a source the student cannot write: ``--times``'s row for ``name``,
    else, in nbgrader's collected layout (``collected``), the timestamp.txt that nbgrader wrote beside the graded
    file, in this assignment's own folder (``<student>/sdpa/``: a file graded from another assignment's folder has
    another submission's time). Anything else gives no time, and says why (``time_problem``)."""
    if name in times:
        return replace(handed, submitted_at=times[name], time_from=TIMES_FILE)
    if not collected:
        return replace(handed, time_problem=UNTRUSTED)
    parts = (handed.relative or "").split("/")
    if not isinstance(handed.submission, Path) or len(parts) != 2 or parts[0] != ASSIGNMENT:
        return replace(handed, time_problem="no trusted submission time: the graded file is not in nbgrader's"
                                            f" <student>/{ASSIGNMENT}/ folder, where its timestamp.txt is")  # fmt: skip
    stamp = handed.submission / parts[0] / TIMESTAMP
    try:
        data = bounded.read_bytes(stamp, 1024, "at most 1024 bytes are read")  # a regular file, not through a link
    except (bounded.Refused, OSError) as why:
        return replace(handed, time_problem=f"no trusted submission time: nbgrader's {TIMESTAMP} {_why(why)}")
    moment = parse_nbgrader_timestamp(data.decode("utf-8", errors="replace"))
    if moment is None:
        return replace(handed, time_problem=f"no trusted submission time: nbgrader's {TIMESTAMP} holds no time the"
                                            " grader can use")  # fmt: skip
    return replace(handed, submitted_at=moment, time_from=NBGRADER)


def read_class(folder: Path, roster: dict[str, Path | tuple[Path, ...]], limits: Limits,
               times: dict[str, datetime]) -> dict[str, HandedIn]:  # fmt: skip
    """Each student of ``roster`` (the class folder ``folder``'s, as ``listing`` lists it) read once through the gate
    (``take``), with the submission time from a source the student cannot write (``with_time``: ``times``, a class
    verb's --times, else nbgrader's own timestamp.txt where ``folder`` is its collected layout): what a class verb
    grades, decides and compares, read here before anything is graded."""
    records = {name: take(roster[name], limits) for name in roster}
    collected = collected_by_nbgrader(folder)
    return {name: with_time(record, name, times, collected) for name, record in records.items()}


NOT_COLLECTED = (
    "no trusted submission time: {file} is not in an nbgrader course's submitted/<student>/{assignment}/ folder"
    " (nbgrader_config.py or gradebook.db beside submitted/), where nbgrader's timestamp.txt is believed; give"
    " --submitted-at TIME or --metadata FILE"
)


def collected_time(graded: Path) -> tuple[str, HandedIn]:
    """A file graded alone: its student and the record of its time, taken as ``with_time`` takes it for a batch: in
    nbgrader's collected layout (``<course>/submitted/<student>/sdpa/<file>``, ``collected_by_nbgrader``), the
    student is the folder under submitted/ and the time nbgrader's timestamp.txt; elsewhere, no student ("") and no
    time, with why (``time_problem``)."""
    path = Path(os.path.abspath(graded))
    folder = path.parent.parent  # <student>/ in nbgrader's layout
    if path.parent.name != ASSIGNMENT or not collected_by_nbgrader(folder.parent):
        return "", HandedIn(graded, time_problem=NOT_COLLECTED.format(file=graded, assignment=ASSIGNMENT))
    record = HandedIn(folder, Choice(folder, path, f"{ASSIGNMENT}/{path.name}"))
    return folder.name, with_time(record, folder.name, {}, collected=True)


@dataclass(frozen=True)
class TimeFrom:
    """Where one grading's submission time comes from, as its path says (grade.grade's ``time``): a batch's gate (the
    student and the time it read, final), or a command line's ``--submitted-at`` and Gradescope's metadata, else
    nbgrader's timestamp.txt beside a file it collected."""

    student: str = ""
    at: datetime | None = None
    time_problem: str = ""
    from_gate: bool = False  # a batch's: the gate's time (or its problem) is the one
    metadata: Path | None = None  # Gradescope's submission_metadata.json


@dataclass(frozen=True)
class When:
    """A submission's time as the gate found it, for the late decision: the student, the time (None where none is
    trusted: ``problem`` says why) and the deadline it is held to (the settings', or the one Gradescope's metadata
    gives)."""

    student: str
    at: datetime | None
    problem: str
    deadline: Deadline


def submitted_time(given: TimeFrom, graded: Path | tuple[Path, ...], deadline: Deadline) -> When:
    """The time of the submission ``graded`` (the file the read stage read, else what was handed in), from where
    ``given`` says: nbgrader's timestamp.txt beside a file it collected (``collected_time``), a batch's gate, or
    Gradescope's metadata (its due date where ``deadline`` sets a policy and none); a time given on the command line
    (``TimeFrom.at``) over any of them."""
    if given.metadata is None and not given.from_gate:
        name, handed = collected_time(graded if isinstance(graded, Path) else graded[0])
        student, submitted, problem = name or given.student, handed.submitted_at, handed.time_problem
    elif given.metadata is None:
        student, submitted, problem = given.student, given.at, given.time_problem
    else:
        student, submitted, deadline = gradescope_time(given.metadata, deadline)
        problem = "" if submitted else f"no trusted submission time: {given.metadata} gives none (created_at)"
    if given.at is not None:
        submitted, problem = given.at, ""
    return When(student, submitted, problem, deadline)


def _why(error: Exception) -> str:
    if isinstance(error, FileNotFoundError):
        return "is missing"
    if isinstance(error, OSError) and error.errno == errno.ELOOP:  # opened with O_NOFOLLOW
        return "is a symbolic link"
    if isinstance(error, OSError):
        return f"cannot be read ({error.strerror or error})"
    return str(error)
