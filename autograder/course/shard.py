"""``sdpa-grade batch DIR --shard K/N``: the students that machine K of N grades.

A student belongs to shard ``hash(name) mod N``, with a hash that is the same on every machine
and every run (SHA-256 of the name, not Python's salted ``hash``). A student's shard depends on
their name alone, so adding students never moves one already graded to another shard, and any
scheduler (a Slurm job array, a Kubernetes indexed Job, a loop over ssh) can split a class by
giving each task its index K. Indices count from 0, as Slurm's ``--array=0-...`` and Kubernetes'
``JOB_COMPLETION_INDEX`` do.
"""

from __future__ import annotations

import hashlib
from typing import TypeVar

T = TypeVar("T")


def parse_shard(text: str) -> tuple[int, int]:
    """``"K/N"`` -> ``(K, N)`` with ``0 <= K < N``; ValueError, naming the text and the form, for anything else (the
    command line's --shard: cli.py says it as a usage error)."""
    index, slash, count = text.partition("/")
    try:
        k, n = int(index), int(count)
    except ValueError:
        k = n = -1
    if not slash or n < 1 or not 0 <= k < n:
        raise ValueError(f"Invalid --shard {text}: expected K/N with 0 <= K < N, e.g. 0/4")
    return k, n


def shard_of(name: str, shards: int) -> int:
    """The shard, in ``0..shards-1``, that grades the student called ``name``."""
    digest = hashlib.sha256(name.encode("utf-8", "surrogateescape")).digest()
    return int.from_bytes(digest[:8], "big") % shards


def select(roster: dict[str, T], shard: tuple[int, int] | None) -> dict[str, T]:
    """The part of ``roster`` (student name -> anything) that ``shard`` grades; all of it for ``None``."""
    if shard is None:
        return roster
    k, n = shard
    return {name: value for name, value in roster.items() if shard_of(name, n) == k}
