"""The gate: what a student hands in enters the trusted side here, once, into one record (``HandedIn``).

A submission (a file, a student's folder, a batch folder's files of one name) is read by ``take``: the graded file
chosen by the one rule (submission.choose, names compared as the students' file systems compare them), its bytes
read once with their bounds (only a regular file, never through a link) and hashed. A class folder is read by
``read_class``: every entry of the folder accounted for (a student, or skipped with its reason), each student's
record taken, and its submission time taken only from a source the student cannot write (``trusted_time``).

Every later step takes the record: the read stage (grade.read makes its bytes into source), staleness
(provenance.stale compares its file and SHA-256), deadlines (its time), similarity (its bytes), the batch's
listing and summary (its entries). None of them opens the student's folder again. Nothing here raises for what a
student handed in: a refusal is the record's ``refused``, that student's alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from autograder.config import Limits
from autograder.submission import Choice, Ungradable, choose, read_bytes


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
