"""The words a check's outcome is made of, as str-valued enums: its status and its category.

Each member is its word (``Status.PASSED == "passed"``, the same hash, the same text in an f-string,
the same JSON), so results.json and every comparison read as the plain word would, while a misspelt status or
category is an AttributeError instead of a comparison that is silently never true. Plain data:
the edge imports it without torch or pytest. With them, the one rule for a check's verdict after points (``verdict``:
passed, kept its points by error carried forward, withheld, or failed), which results.json (its ``extra_data.verdict``
and Gradescope's ``status``), the terminal, the feedback pages, the class results, the dashboard's counts and
nbgrader's cells all follow.
"""

from __future__ import annotations

from enum import Enum


class _Word(str, Enum):
    """A member that is its value: as text, as a dict key, in a set, in JSON."""

    __hash__ = str.__hash__

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


class Status(_Word):
    """One check's result, before points (results.json's ``extra_data.outcome``)."""

    PASSED = "passed"
    FAILED = "failed"
    NOT_RUN = "not-run"  # skipped: no GPU on this machine; a knowledge-check answer not handed in (checks/quiz.py)
    GRADER_ERROR = "grader-error"  # the grader itself failed on this check


class Category(_Word):
    """What kind of property a check tests (its marker's ``category``, results.json's second tag)."""

    SHAPE = "shape"
    VALUES = "values"
    MATCHES_TORCH = "matches-torch"
    NAN_SAFETY = "nan-safety"
    STABILITY = "stability"
    CAUSAL = "causal"
    MASKING = "masking"
    GRADIENT = "gradient"
    DTYPE = "dtype"
    NO_MUTATION = "no-mutation"
    MULTI_HEAD = "multi-head"
    VARIANCE = "variance"
    TIMING = "timing"
    INTEGRITY = "integrity"
    MEMORY = "memory"
    LOAD = "load"


class Verdict(_Word):
    """A check's verdict after points (results.json's ``extra_data.verdict``): what every reader shows, each state in
    its own word, never one read as another."""

    PASSED = "passed"  # earned all it is worth
    CARRIED = "carried"  # kept its points: fails only through the functions it builds on, each losing points elsewhere
    WITHHELD = "withheld"  # gated: not awarded until its function passes its own correctness checks
    FAILED = "failed"  # earned less than it is worth

    @property
    def shown(self) -> str:
        """The verdict in a person's words (the terminal, the pages, the class's counts, nbgrader's cells)."""
        return _SHOWN[self]


_SHOWN = {
    Verdict.PASSED: "passed",
    Verdict.CARRIED: "kept its points",
    Verdict.WITHHELD: "withheld",
    Verdict.FAILED: "failed",
}


def verdict(check) -> Verdict:
    """The one rule for a check's verdict, on its fields (a scored check, a results record's ``CheckResult``):
    ``withheld`` is withheld whatever its points; a check that earned all it is worth passed, unless it failed and
    kept its points by error carried forward (``carried``: the functions it builds on); else it failed. Which checks
    count at all (worth more than 0, run) is the reader's to say."""
    if check.withheld:
        return Verdict.WITHHELD
    if check.score != check.max_score:
        return Verdict.FAILED
    return Verdict.CARRIED if check.carried else Verdict.PASSED


def passed(check) -> bool:
    """Whether the check passed (``verdict``): not one that kept its points by error carried forward, nor a withheld
    one."""
    return verdict(check) == Verdict.PASSED


def earned(check) -> bool:
    """Whether the check kept all it is worth: it passed, or kept its points by error carried forward."""
    return verdict(check) in (Verdict.PASSED, Verdict.CARRIED)


# A student's status in a class, as the CSV and the dashboard write it (course/class_results.status_of)
GRADED, UNGRADABLE, GRADER_ERROR, MISSING = "graded", "ungradable", "grader-error", "missing"
# The class's own flags, besides the integrity check's: a deadline needed a time this submission does not have; a
# submission with other files that could be the graded one, or a search stopped by a bound
NO_TIME = "no submission time"
FILE_CHOICE = "file choice"
HELD = "held"  # a grade of record held out of every export until cleared (course/decisions.py)
