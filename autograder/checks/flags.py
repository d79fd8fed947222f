"""Integrity flags: failures an instructor should review, kept as a field (``extra_data.flag``).

A flag costs the check's points like any failure; unlike a mistake, it marks evidence that
the submission reached around the assignment (fused attention, torch internals, answers that
do not match the work timed, or what an attack leaves in the source: torch patched, the grader
imported, files written), and the class summary lists the flagged students by name.
"""

from __future__ import annotations

from autograder.checks.expect import CheckFailure

REASONS = {
    "fused_ran": "PyTorch's fused attention ran during a call",
    "fused_source": "the source reaches for PyTorch's fused attention",
    "dynamic_reach": "the source reaches torch internals or builds names at run time",
    "timed_answer_wrong": "a timed call returned a wrong or stale answer",
    "patches_torch": "the source replaces torch's own functions",
    "imports_grader": "the source imports the grader's reference or its modules",
    "writes_files": "the source writes files it was not asked to",
    "builds_code": "the source builds code at run time or reaches native memory",
    "whole_softmax": "blockwise attention called the student's own attention or softmax on all keys at once",
    "names_built": "the source builds names at run time (for review: no points taken)",
}
# flags on a check that passed: shown for the instructor's review, never a deduction (``review``)
REVIEW_ONLY = frozenset({"names_built"})
# what each tampering kind (integrity.tampering) did, as the student's feedback says it
TAMPERING = {
    "patches_torch": "replaces torch's own functions",
    "imports_grader": "imports the grader's reference or its modules",
    "writes_files": "writes files",
    "builds_code": "builds code at run time or reaches native memory",
}


class IntegrityFlag(CheckFailure):
    """A failed check that also flags the submission for review; ``flag`` is a key of REASONS (the feedback
    says "Flagged for the instructor's review", written at the edge: autograder/render/text.py)."""

    def __init__(self, message: str, flag: str) -> None:
        super().__init__(message)
        self.flag = flag


def flag(message: str, key: str) -> None:
    """Fail the check and flag the submission: ``key`` (in REASONS) travels as a field, ``message`` is shown."""
    raise IntegrityFlag(message, key)


def review(request, message: str, key: str) -> None:
    """Let the check pass, with ``message`` and the flag ``key`` (in REVIEW_ONLY) for the instructor's review: the
    plugin reads them from the test's ``user_properties``; the points are the check's."""
    request.node.user_properties.append(("review", (key, message)))
