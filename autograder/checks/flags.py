"""Integrity flags: failures an instructor should review, kept as a field (``extra_data.flag``).

A flag costs the check's points like any failure; unlike a mistake, it marks evidence that
the submission reached around the assignment (fused attention, torch internals, answers that
do not match the work timed), and the class summary lists the flagged students by name.
"""

from __future__ import annotations

from autograder.checks.expect import CheckFailure

REASONS = {
    "fused_ran": "PyTorch's fused attention ran during a call",
    "fused_source": "the source reaches for PyTorch's fused attention",
    "dynamic_reach": "the source reaches torch internals or builds names at run time",
    "timed_answer_wrong": "a timed call returned a wrong or stale answer",
}


class IntegrityFlag(CheckFailure):
    """A failed check that also flags the submission for review; ``flag`` is a key of REASONS."""

    def __init__(self, message: str, flag: str) -> None:
        super().__init__(message)
        self.flag = flag


def flag(message: str, key: str) -> None:
    """Fail the check and flag the submission: ``key`` (in REASONS) travels as a field, ``message`` is shown."""
    raise IntegrityFlag(f"{message}. Flagged for the instructor's review.", key)
