"""The shapes of trouble the contract names are in the value checks' inputs on every draw, not left to the seed.

A single allowed key, fully masked rows, T_k = 1 and T_q = 1 under a mask, keys of another length than the
queries, lengths of 0 and T_k: each wrong idiom below passed its check on every seed or on some seeds only before
(bench/every_draw.py; docs/grading.md, "Seed independence"), and fails it on every draw now. Two seeds here, in
this process; the 50-seed measurement is the bench's. More queries than keys and fewer: each value check of the
softmax, the attention and the module meets both on every draw (six seeds here).
"""

from __future__ import annotations

import importlib

import pytest
import torch

from autograder.checks.cases import Draw
from autograder.checks.expect import CheckFailure
from autograder.checks.student import Student, StudentFault
from autograder.config import load_settings
from tests.helpers import with_overlay, words_of
from tests.in_process import InProcess

SETTINGS = load_settings()
SEEDS = (4, 6)
MODULES = ("check_1_pieces", "check_2_softmax", "check_3_sdpa", "check_4_mha_variance")

# overlay -> the value check that catches it on every draw (its grading case in tests/grading_cases.py)
CAUGHT = {
    "mistake_one_key_is_one": "softmax_fully_masked",
    "mistake_single_key_rows_zeroed": "softmax_masked",
    "mistake_mask_skipped_for_one_query": "sdpa_matches_torch",
    "mistake_mha_mask_query_length": "mha_masks",
    "mistake_padding_at_least_one_key": "padding_lengths",
}


@pytest.fixture
def check():
    """A hidden check by name, run here as a function (its marker is registered in pyproject.toml too)."""
    modules = [importlib.import_module(f"autograder.checks.{name}") for name in MODULES]
    return lambda name: next(getattr(m, f"test_{name}") for m in modules if hasattr(m, f"test_{name}"))


def student(overlay: str | None, source: str | None = None) -> Student:
    source = with_overlay(overlay) if source is None else source
    namespace: dict = {}
    exec(compile(source, "attention.py", "exec"), namespace)  # noqa: S102 - the suite's own submissions
    return Student(InProcess(namespace), timeout=30)


def passes(function, loaded, seed: int) -> bool:
    try:
        function(loaded, Draw(seed), SETTINGS)
    except (CheckFailure, StudentFault):
        return False
    return True


@pytest.mark.timeout(120)
@pytest.mark.parametrize("overlay", sorted(CAUGHT))
def test_a_wrong_idiom_fails_its_check_on_every_draw(check, overlay):
    """Each idiom fails the check that tests its shape of trouble, on every seed tried; the reference passes it."""
    function = check(CAUGHT[overlay])
    for seed in SEEDS:
        assert passes(function, student(None), seed)
        assert not passes(function, student(overlay), seed), f"seed {seed}"


@pytest.mark.parametrize("seed", SEEDS)
def test_every_drawn_mask_has_a_single_allowed_key_and_no_empty_row(seed):
    """Draw.mask: no row fully masked, and its last row allows exactly one key, whatever the shape."""
    draw = Draw(seed)
    for shape in ((5, 7), (3, 1, 6), (2, 1, 1, 4), (2, 3, 4, 2)):
        rows = draw.mask(*shape).reshape(-1, shape[-1])
        assert bool(rows.any(dim=-1).all())
        assert int(rows[-1].sum()) == 1
    assert torch.equal(Draw(seed).mask(5, 7), Draw(seed).mask(5, 7))  # the same seed, the same mask


class _Recording(InProcess):
    """The reference in this process, noting each call of the attention: its mask's kind and whether it had more
    queries than keys."""

    def __init__(self, namespace: dict) -> None:
        super().__init__(namespace)
        self.met: set[tuple[str, bool]] = set()

    def call(self, target: str, args=(), kwargs=None, *, timeout: float, **options):
        if target == "scaled_dot_product_attention":
            Q, K = args[0], args[1]
            mask = (kwargs or {}).get("mask", args[3] if len(args) > 3 else None)
            if mask is None:
                kind = "none"
            elif mask.dim() == 2:
                kind = "(T_q, T_k)"
            else:
                kind = "(B, 1, 1, T_k)" if mask.size(-2) == 1 and mask.size(-3) == 1 else "(B, H, T_q, T_k)"
            if min(Q.size(-2), K.size(-2)) > 1:  # the edge shapes (one query, one key) are cases of their own
                self.met.add((kind, Q.size(-2) > K.size(-2)))
        return super().call(target, args, kwargs, timeout=timeout, **options)


@pytest.mark.parametrize("seed", SEEDS)
def test_every_mask_meets_more_queries_than_keys_and_fewer(check, seed):
    """sdpa_matches_torch calls the attention under each broadcast mask with T_q > T_k and with T_q < T_k on every
    draw, not with the one order a seed happens to draw."""
    runner = _Recording(vars(importlib.import_module("reference.attention")))
    check("sdpa_matches_torch")(Student(runner, timeout=30), Draw(seed), SETTINGS)
    for kind in ("(T_q, T_k)", "(B, 1, 1, T_k)", "(B, H, T_q, T_k)"):
        assert {(kind, True), (kind, False)} <= runner.met, (kind, sorted(runner.met))


# Two submissions wrong in one order of the lengths alone: the reference whose masked_softmax scales its weights by
# 0.9 where the scores have more queries than keys (or fewer). Each value check that takes scores from either order
# must see both on every draw; before, five of them drew one order a seed.
ONE_ORDER = """
_right_softmax = masked_softmax


def masked_softmax(scores, mask=None):
    weights = _right_softmax(scores, mask)
    return weights * 0.9 if {wrong} else weights
"""
ORDERS = {
    "more queries than keys": "scores.size(-2) > scores.size(-1)",
    "more keys than queries": "scores.size(-2) < scores.size(-1)",
}
BOTH_ORDERS = (
    "softmax_values",
    "softmax_masked",
    "softmax_fully_masked",
    "softmax_stability",
    "sdpa_matches_torch",
    "sdpa_causal",
    "sdpa_fully_masked",
    "sdpa_dtypes",
    "sdpa_gradients",
    "mha_matches_torch",
    "mha_masks",
)
SIX_SEEDS = (1, 2, 3, 4, 5, 6)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", BOTH_ORDERS)
@pytest.mark.parametrize("order", sorted(ORDERS))
def test_a_mistake_in_one_order_of_the_lengths_fails_on_every_draw(check, order, name):
    """A softmax wrong only with more queries than keys, and one wrong only with fewer, each fail every value check
    of the softmax, the attention and the module on every seed of six."""
    function = check(name)
    wrong = student(None, with_overlay(None) + ONE_ORDER.format(wrong=ORDERS[order]))
    passed = [seed for seed in SIX_SEEDS if passes(function, wrong, seed)]
    assert not passed, f"{name} passed the softmax wrong with {order} on seeds {passed}"


def _words(function, loaded, seed: int) -> str:
    """What the check says of ``loaded`` on ``seed``, every number as #: the words, not the draw's sizes."""
    try:
        function(loaded, Draw(seed), SETTINGS)
    except (CheckFailure, StudentFault) as failure:
        return words_of(str(failure))
    return "passed"


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", BOTH_ORDERS)
@pytest.mark.parametrize("order", sorted(ORDERS))
def test_a_mistake_in_one_order_of_the_lengths_gets_the_same_words_on_every_draw(check, order, name):
    """Each value check names the case it failed in the same words on every seed of six: it runs the orders in a
    fixed order (fewer queries than keys first), never the drawn one first."""
    function = check(name)
    wrong = student(None, with_overlay(None) + ONE_ORDER.format(wrong=ORDERS[order]))
    said = {seed: _words(function, wrong, seed) for seed in SIX_SEEDS}
    assert len(set(said.values())) == 1, said
