"""The words a check's outcome is made of, as str-valued enums: its status and its category.

Each member is its word (``Status.PASSED == "passed"``, the same hash, the same text in an f-string,
the same JSON), so results.json and every comparison read as before, while a misspelt status or
category is an AttributeError instead of a comparison that is silently never true. Plain data:
the edge imports it without torch or pytest. With them, the one rule for whether a check passed (``passed``),
which results.json's ``status``, the feedback pages, the class results and the similarity report all follow.
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
    NOT_RUN = "not-run"  # skipped: no GPU on this machine
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
    LOAD = "load"


def passed(check) -> bool:
    """The one rule for a check's verdict, on its points (a scored check, a results record's ``CheckResult``): it
    passed when it earned all it is worth. A check carried forward passed (it kept its points); a withheld one has
    not yet. Which checks count at all (worth more than 0, run) is the reader's to say."""
    return check.score == check.max_score
