"""What the timing check spends: short warm-up rounds, whole measured rounds, every round's answers checked."""

from __future__ import annotations

import random
import statistics
from collections import defaultdict
from types import SimpleNamespace

import pytest
import torch

from autograder.checks.cases import Draw
from autograder.checks.timing import (
    CPU_REPEAT,
    CPU_SHAPES,
    FORMS,
    GROWTH_TO,
    WARM_UP_REPEAT,
    Bounds,
    judge,
    keywords,
    measure,
    over,
)
from reference import attention as ref

SHAPE = (2, 1, 4, 4, 4)


class _Counting:
    """An honest attention, in this process, that notes how many calls each of its rounds had, per form; in ``wrong``
    rounds (by their number in the form, 0 the first) its first call answers zeros."""

    def __init__(self, wrong: tuple[int, ...] = ()) -> None:
        self.calls: dict[str, list[int]] = defaultdict(list)
        self.wrong = wrong

    def timed(self, target, inputs, outputs, device="cpu", kwargs=None):
        form = FORMS[2] if kwargs else FORMS[1] if len(inputs[0]) == 4 else FORMS[0]
        answers = []
        for index, (Q, K, V, *mask) in enumerate(inputs):
            right = ref.scaled_dot_product_attention(Q, K, V, *mask, **(kwargs or {}))
            wrong = index == 0 and len(self.calls[form]) in self.wrong
            answers.append([torch.zeros_like(t) for t in right] if wrong else list(right))
        self.calls[form].append(len(inputs))
        return SimpleNamespace(ok=True, outputs=answers, cpu_seconds=1.0, seconds=1.0)


def test_a_warm_up_round_is_short_and_every_measured_round_whole():
    """Each form's first round (never measured) has WARM_UP_REPEAT calls; each of the 3 measured rounds CPU_REPEAT."""
    student, reference = _Counting(), _Counting()
    found = measure(student, reference, Draw(3), SHAPE, rounds=9, repeat=CPU_REPEAT, tolerance=(1e-5, 1e-5))
    assert found.wrong == "" and found.cpu_ratio == 1.0
    for counted in (student, reference):
        assert dict(counted.calls) == {form: [WARM_UP_REPEAT, CPU_REPEAT, CPU_REPEAT, CPU_REPEAT] for form in FORMS}
    assert WARM_UP_REPEAT < CPU_REPEAT


def test_a_wrong_answer_in_a_warm_up_round_is_caught_every_time():
    """A warm-up round's answers are checked like a measured round's, and all of them, since it is short: one wrong
    call among them is always caught (among 10 calls with 2 checked, it was caught one time in five)."""
    for seed in range(10):
        found = measure(
            _Counting(wrong=(0,)), _Counting(), Draw(seed), SHAPE, rounds=9, repeat=CPU_REPEAT, tolerance=(1e-5, 1e-5)
        )
        assert "differs from the expected one" in found.wrong
        assert f"({FORMS[0]})" in found.wrong  # the first form's warm-up: nothing after it ran


def test_every_form_is_still_timed_with_its_own_inputs():
    """The warm-up change leaves the forms alone: a bool mask only in its form, is_causal=True only in its own."""
    seen: dict[str, set] = defaultdict(set)

    class _Recording(_Counting):
        def timed(self, target, inputs, outputs, device="cpu", kwargs=None):
            seen[repr(kwargs or {})].add(len(inputs[0]))
            return super().timed(target, inputs, outputs, device, kwargs)

    measure(_Recording(), _Counting(), Draw(5), SHAPE, rounds=9, repeat=CPU_REPEAT, tolerance=(1e-5, 1e-5))
    assert seen == {"{}": {3, 4}, repr(keywords(FORMS[2])): {3}}


class _Costed:
    """An attention in this process whose answers are the reference's and whose CPU time per call is a cost model:
    ``constant`` seconds whatever the size, plus ``per_item`` for each (batch, head, query) it covers."""

    def __init__(self, constant: float, per_item: float) -> None:
        self.constant, self.per_item = constant, per_item
        self.exchanges: dict[tuple, int] = defaultdict(int)  # timed rounds, by the inputs' (..., T_q) shape

    def timed(self, target, inputs, outputs, device="cpu", kwargs=None):
        answers = [list(ref.scaled_dot_product_attention(*args, **(kwargs or {}))) for args in inputs]
        Q = inputs[0][0]
        self.exchanges[tuple(Q.shape[:-1])] += 1
        items = Q.numel() // Q.size(-1)  # B x H x T_q
        seconds = len(inputs) * (self.constant + self.per_item * items)
        return SimpleNamespace(ok=True, outputs=answers, cpu_seconds=seconds, seconds=seconds)


REFERENCE_COST = _Costed(40e-6, 0.125e-6)  # about the reference's cost on the CPU shapes (docs/performance.md)


def _judged(student, shape=CPU_SHAPES[0]):
    return judge(
        student,
        REFERENCE_COST,
        Draw(11),
        shape,
        large=GROWTH_TO[shape],
        budget=5.0,
        retries=2,
        rounds=9,
        repeat=CPU_REPEAT,
        tolerance=(1e-5, 1e-5),
    )


def test_constant_work_on_every_call_is_not_taken_for_a_loop():
    """A vectorised attention that spends 1 ms on every call whatever its size (nanoGPT's 1024 x 1024 causal buffer
    built per call) is over the budget by its ratio on every shape, and passes by its growth."""
    nanogpt = _Costed(40e-6 + 1e-3, 0.125e-6)
    for shape in CPU_SHAPES:
        passed, found = _judged(nanogpt, shape)
        assert passed, found
        assert found.large == GROWTH_TO[shape] and found.cpu_ratio == pytest.approx(1.0)


def test_a_loop_fails_by_its_growth_measured_once():
    """A loop (40 us per item, 320 times the reference's) fails by its growth, far over the budget: measured once."""
    for shape in CPU_SHAPES:
        loop = _Costed(40e-6, 40e-6)
        passed, found = _judged(loop, shape)
        assert not passed and found.large == GROWTH_TO[shape]
        assert found.cpu_ratio == pytest.approx(320.0)
        B, H, T_q, _, _ = GROWTH_TO[shape]
        # one warm-up and two measured rounds per form: both far over the budget, a third could change nothing
        assert loop.exchanges[(B, H, T_q)] == len(FORMS) * 3


def test_within_the_budget_by_its_ratio_nothing_more_is_measured():
    """An honest attention within the budget by its ratio is measured once, on the shape alone, in two measured
    rounds a form: within the budget in both, the third could not change the median's side of it."""
    honest = _Costed(60e-6, 0.25e-6)
    passed, found = _judged(honest)
    assert passed and found.large == () and found.cpu_ratio == pytest.approx((60 + 256) / (40 + 128))
    B, H, T_q, _, _ = CPU_SHAPES[0]
    assert honest.exchanges[(B, H, T_q)] == len(FORMS) * 3 and len(honest.exchanges) == 1


class _Noisy(_Costed):
    """The reference's cost, but in the rounds of ``form`` listed in ``slow`` (by their number in the form, 0 the
    warm-up) every call costs ``factor`` times as much."""

    def __init__(self, form: str, slow: tuple[int, ...], factor: float) -> None:
        super().__init__(REFERENCE_COST.constant, REFERENCE_COST.per_item)
        self.form, self.slow, self.factor, self.rounds = form, slow, factor, defaultdict(int)

    def timed(self, target, inputs, outputs, device="cpu", kwargs=None):
        form = FORMS[2] if kwargs else FORMS[1] if len(inputs[0]) == 4 else FORMS[0]
        reply = super().timed(target, inputs, outputs, device, kwargs)
        if form == self.form and self.rounds[form] in self.slow:
            reply.cpu_seconds *= self.factor
        self.rounds[form] += 1
        return reply


def test_a_form_split_by_its_first_two_rounds_is_measured_a_third_time():
    """One slow round among a form's first two measured ones leaves its median's side of the budget open: the third
    round is taken, and decides as all three rounds do (within the budget here, the slow round outvoted)."""
    noisy = _Noisy(FORMS[1], slow=(1,), factor=20.0)
    passed, found = _judged(noisy)
    assert passed and found.large == ()
    assert dict(noisy.rounds) == {form: 4 for form in FORMS}  # a warm-up and three measured rounds, every form


def test_stopping_early_never_changes_a_decision():
    """For every split of a form's three rounds seen in 2000 random draws around the bounds (within, over, far
    over): where the first two settle it, the median of the two is on the same side of every bound as the median of
    all three, and where they do not, the rounds go on."""
    bounds = Bounds.of(5.0, "cpu", 10.0)
    draws = random.Random(7)
    settled = 0
    for _ in range(2000):
        cpu = [draws.choice([0.5, 4.9, 5.0, 5.1, 9.9, 10.0, 10.1, 300.0]) for _ in range(3)]
        wall = [draws.choice([1.0, 10.0, 10.1, 50.0]) for _ in range(3)]
        if not bounds.settled({"form": cpu[:2]}, {"form": wall[:2]}, 3):
            continue
        settled += 1
        for values, limits in ((cpu, bounds.cpu), (wall, bounds.wall)):
            for bound in limits:
                assert (statistics.median(values[:2]) <= bound) == (statistics.median(values) <= bound), values
    assert 0 < settled < 2000  # some settled by two rounds, some not


class _CostedByForm(_Costed):
    """A cost model whose per-item cost depends on the call form: ``per_item`` maps each form to its own."""

    def __init__(self, constant: float, per_item: dict) -> None:
        super().__init__(constant, 0.0)
        self.by_form = per_item

    def timed(self, target, inputs, outputs, device="cpu", kwargs=None):
        form = FORMS[2] if kwargs else FORMS[1] if len(inputs[0]) == 4 else FORMS[0]
        self.per_item = self.by_form[form]
        return super().timed(target, inputs, outputs, device, kwargs)


def test_the_feedback_names_every_form_over_the_budget_in_order():
    """A loop in every form names all three, in FORMS' order, whichever measured slowest (the noise decides that);
    a loop in one form names that one alone."""
    everywhere = _CostedByForm(40e-6, {FORMS[0]: 30e-6, FORMS[1]: 35e-6, FORMS[2]: 40e-6})
    passed, found = _judged(everywhere)
    assert not passed and found.form == FORMS[2]  # the slowest
    assert over(found, 5.0) == list(FORMS)
    one = _CostedByForm(40e-6, {FORMS[0]: 30e-6, FORMS[1]: 0.125e-6, FORMS[2]: 0.125e-6})
    passed, found = _judged(one)
    assert not passed and over(found, 5.0) == [FORMS[0]]
