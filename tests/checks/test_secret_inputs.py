"""The hidden inputs, and which timed answers are verified, are secrets the worker cannot recover or replay."""

from __future__ import annotations

import random
from types import SimpleNamespace

import torch

from autograder.checks import cases
from autograder.checks.cases import Draw
from autograder.checks.timing import measure
from reference import attention as ref


def test_one_drawn_tensor_does_not_predict_the_next(monkeypatch):
    """Recovering the torch seed behind one input (32 bits, found by search)
    and replaying it predicts no other input."""
    made = []
    real = torch.Generator

    def recording():
        made.append(real())
        return made[-1]

    monkeypatch.setattr(cases.torch, "Generator", recording)
    draw = Draw(123456789)
    first, second = draw.normal(1000), draw.normal(1000)
    monkeypatch.setattr(cases.torch, "Generator", real)
    # the attacker's replay, from the very 32 bits that produced the first tensor
    behind_first = [
        g
        for g in made
        if torch.equal(
            torch.randn(1000, generator=real().manual_seed(g.initial_seed() & 0xFFFFFFFF), dtype=torch.float64), first
        )
    ]
    assert behind_first, "the first tensor was drawn from none of the recorded generators"
    replay = real().manual_seed(behind_first[0].initial_seed() & 0xFFFFFFFF)
    torch.randn(1000, generator=replay, dtype=torch.float64)
    assert not torch.equal(torch.randn(1000, generator=replay, dtype=torch.float64), second)


def test_the_same_seed_draws_the_same_inputs():
    """A grading is reproducible from its seed (sdpa-grade grade --seed): same seed, same sizes and tensors."""
    a, b = Draw(42), Draw(42)
    assert a.sizes(3) == b.sizes(3) and torch.equal(a.normal(4, 5), b.normal(4, 5))
    assert not torch.equal(Draw(43).normal(4, 5), Draw(42).normal(4, 5))


class _Cheat:
    """A timed attention that knows the grading's seed and answers only the repetitions a seeded picker would
    verify (zeros for the rest): what a worker that recovered the seed could do."""

    def __init__(self, seed: int, repeat: int) -> None:
        self.picker = random.Random(Draw(seed).integer(0, 2**31))
        self.repeat = repeat

    def timed(self, target, inputs, outputs, device="cpu", kwargs=None):
        verified = set(self.picker.sample(range(self.repeat), 2))
        answers = []
        for index, (Q, K, V, *mask) in enumerate(inputs):
            right = ref.scaled_dot_product_attention(Q, K, V, *mask, **(kwargs or {}))
            answers.append(list(right) if index in verified else [torch.zeros_like(t) for t in right])
        return SimpleNamespace(ok=True, outputs=answers, cpu_seconds=1.0, seconds=1.0)


class _Yardstick:
    def timed(self, target, inputs, outputs, device="cpu", kwargs=None):
        return SimpleNamespace(ok=True, outputs=[], cpu_seconds=1.0, seconds=1.0)


def test_which_timed_answers_are_verified_cannot_be_predicted_from_the_seed():
    """Answering only the repetitions a seed-driven choice would verify is caught: the choice is the system CSPRNG's."""
    seed, repeat = 987654321, 10
    found = measure(
        _Cheat(seed, repeat), _Yardstick(), Draw(seed), (2, 1, 4, 4, 4), rounds=7, repeat=repeat, tolerance=(1e-5, 1e-5)
    )
    assert "differs from the expected one" in found.wrong
