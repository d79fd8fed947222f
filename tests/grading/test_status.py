"""autograder/status.py: statuses and categories are enums that read as their words everywhere."""

from __future__ import annotations

import json

from autograder.assignment.catalogue import catalogue
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


def test_a_verdict_is_one_word_for_each_state():
    """verdict: withheld whatever its points; a failed check that kept its points (carried) is neither passed nor
    failed; only a check that earned its points with nothing carried passed."""
    from types import SimpleNamespace

    from autograder.status import Verdict, earned, passed, verdict

    def check(score, carried=(), withheld=False):
        return SimpleNamespace(score=score, max_score=2, carried=carried, withheld=withheld)

    cases = [(check(2), Verdict.PASSED), (check(2, ("scale_scores",)), Verdict.CARRIED),
             (check(0, withheld=True), Verdict.WITHHELD), (check(0), Verdict.FAILED)]  # fmt: skip
    assert [verdict(item) for item, _ in cases] == [expected for _, expected in cases]
    assert [passed(item) for item, _ in cases] == [True, False, False, False]
    assert [earned(item) for item, _ in cases] == [True, True, False, False]
    assert Verdict.CARRIED == "carried" and Verdict.CARRIED.shown == "kept its points"
