"""A class of the reference stands in as a function does (checks/substitution.py): a mistake in KVCache alone costs
KVCache's own checks, and attend_with_cache's keep their points, carried to KVCache, once attend_with_cache passes with
the cache's every call answered by the reference (replayed on the grader's side). The part's checks run in this process
(tests/decoding_cases.py)."""

from __future__ import annotations

import pytest
import torch

from autograder.assignment.catalogue import catalogue
from autograder.checks import substitution
from autograder.sandbox.student_side import serving
from tests.decoding_cases import SETTINGS, graded
from tests.helpers import SUBMISSIONS, with_overlay

CACHE_CHECKS = {entry.check for entry in catalogue() if entry.function == "KVCache"}
OVERLAYS_TOP_LEFT = SUBMISSIONS / "overlays" / "mistake_decoding_top_left.py"
DECODE_CHECKS = {entry.check for entry in catalogue() if entry.function == "attend_with_cache"}


@pytest.mark.timeout(120)
def test_a_kvcache_mistake_costs_only_kvcaches_checks():
    """The cache grown on the head axis: KVCache's checks lose their points, attend_with_cache's keep theirs (carried)
    and say that it builds on KVCache."""
    found = graded("mistake_cache_head_axis", 0)
    lost = {check: points for check, (points, _, _) in found.items() if points}
    assert lost == {check: SETTINGS.points[check] for check in CACHE_CHECKS}
    for check in DECODE_CHECKS:
        assert "it builds on KVCache" in found[check][2], check


@pytest.mark.timeout(120)
def test_a_mistake_in_attend_with_cache_itself_is_not_freed_by_the_cache():
    """attend_with_cache aligned top-left beside the same cache mistake: with the reference's cache it still fails,
    so its checks lose their points besides KVCache's."""
    found = graded(None, 0, source=with_overlay("mistake_cache_head_axis") + "\n" + OVERLAYS_TOP_LEFT.read_text())
    lost = {check for check, (points, _, _) in found.items() if points}
    assert CACHE_CHECKS <= lost
    assert {"decoding_matches_full_pass", "decoding_alignment"} <= lost


def test_the_grader_replays_a_question_on_the_references_class():
    """A question about a class is its constructor's arguments and the calls made so far: answered by replaying them on
    a fresh object of the reference's class, its last call's result; a method the class lacks gets no answer."""
    K, V = torch.randn(2, 3, 4), torch.randn(2, 3, 5)
    question = [1, 6, "append", 2, K[:, :2], V[:, :2], "append", 2, K[:, 2:], V[:, 2:], "__len__", 0]
    assert substitution._value("KVCache", question) == 3
    K_all, V_all = substitution._value("KVCache", question[:-2])
    assert torch.equal(K_all, K) and torch.equal(V_all, V)
    assert substitution._value("KVCache", [1, 6, *question[2:6], "__getattribute__", 1, "max_len"]) == 6
    for refused in (
        [1, 6, "__class__", 0],  # not a method the class defines
        [1, 6, "__getattribute__", 1, "_secret"],  # not a public attribute
        [1, 6, "__getattribute__", 1, "append"],  # a method, not a plain result: the reference's code stays here
        [1, 6, "append", 2, K[:, :2]],  # calls that do not read as such
    ):
        with pytest.raises(substitution.Refused):
            substitution._value("KVCache", refused)
    with pytest.raises(substitution.Refused):
        substitution._value("KVCache", [1, 6, *["__len__", 0] * (substitution.MAX_STEPS + 1)])


SOURCE = """
import torch
from torch import Tensor


class Cache:
    def __init__(self) -> None:
        self.K: Tensor | None = None

    def append(self, K_new: Tensor) -> Tensor:
        self.K = K_new if self.K is None else torch.cat([self.K, K_new], dim=-2)
        return self.K

    def __len__(self) -> int:
        return 0 if self.K is None else self.K.size(-2)


Alias = Cache


def use(K: Tensor) -> Tensor:
    cache = Alias()
    repr(K)  # torch's Tensor.__repr__, written in Python: not the submission's
    return cache.append(K) * len(cache)
"""


def test_a_call_records_the_submissions_classes_whose_methods_it_ran(tmp_path):
    """A class enters a call's record when one of its own methods runs, by the name it was defined with; an imported
    class (torch's Tensor) is never recorded nor touched, and the class's methods are its own again after the call."""
    path = tmp_path / "attention.py"
    path.write_text(SOURCE)
    module = serving._load(str(path), guard=False)  # here: the code guard is the sandbox's (test_fused_attention)
    before = dict(vars(module.Cache)), dict(vars(torch.Tensor))
    reply = serving._call(module, {"target": "use", "args": [torch.randn(2, 3, 4)]})
    assert reply["ok"] and reply["entered"] == ["Cache"]
    assert (dict(vars(module.Cache)), dict(vars(torch.Tensor))) == before
