"""autograder/status.py: statuses and categories are enums that read as their words everywhere."""

from __future__ import annotations

import json

from autograder.checks.catalogue import catalogue
from autograder.status import Category, Status


def test_a_member_is_its_word():
    """Equal to its word, found in a set or dict of words, printed and dumped to JSON as the word."""
    assert Status.NOT_RUN == "not-run" and "not-run" in {Status.NOT_RUN} and Status.NOT_RUN in {"not-run"}
    assert {"grader-error": 1}[Status.GRADER_ERROR] == 1
    assert f"{Status.PASSED}|{Category.NAN_SAFETY:>11}" == "passed| nan-safety"
    assert json.dumps({"outcome": Status.FAILED, "tags": ["f", Category.MULTI_HEAD]}) == (
        '{"outcome": "failed", "tags": ["f", "multi-head"]}')  # fmt: skip


def test_every_check_declares_a_known_category():
    """The categories the hidden checks declare are members of Category."""
    assert {entry.category for entry in catalogue()} <= set(Category)
