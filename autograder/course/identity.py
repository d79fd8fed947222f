"""How the course's features compare the names, e-mail addresses and ids that tell students apart: one normalisation
(Unicode NFKC, then case folding) for all of them, and the refusal of two students that it makes one.

A name that only looks like a classmate's (the Kelvin sign U+212A folds to ``k``; a full-width or a composed letter
to its plain form) must never take the classmate's row in a gradebook or their learner on the LMS: each export
compares through ``key`` and refuses, before anything is written or sent, students that share a key (``twins``).
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterable

from autograder.render.inert import shown


def key(value: str) -> str:
    """``value`` as every comparison of identities sees it: NFKC, then case folded."""
    return unicodedata.normalize("NFKC", value).casefold()


def twins(names: Iterable[str]) -> list[tuple[str, ...]]:
    """The groups of two or more ``names`` that share one key, each in the order given: students the course would
    otherwise take for one another."""
    groups: dict[str, list[str]] = {}
    for name in names:
        groups.setdefault(key(name), []).append(name)
    return [tuple(group) for group in groups.values() if len(group) > 1]


def twins_line(names: Iterable[str]) -> str:
    """Why an export refuses the class ("" when it need not): each group of students whose names compare as one,
    named, who would be written or sent as one."""
    found = twins(names)
    if not found:
        return ""
    groups = "; ".join(" and ".join(json.dumps(shown(name), ensure_ascii=False) for name in group) for group in found)
    return f"students whose names compare as one (Unicode NFKC, without case): {groups}; rename their folders apart"
