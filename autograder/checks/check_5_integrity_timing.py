"""Integrity (no fused attention) and the timing budget. Both run last, after every other call."""

import pytest
import torch

from autograder.checks.expect import dtype_name, fail
from autograder.checks.flags import TAMPERING, flag, review
from autograder.checks.integrity import dynamic_reach, fused_uses, tampering
from autograder.checks.student import StudentFault
from autograder.checks.timing import (
    CPU_REPEAT,
    CPU_SHAPES,
    GPU_REPEAT,
    GPU_SHAPES,
    GROWTH_TO,
    WALL_SLACK,
    folded,
    judge,
    over,
)


def _integrity(request, source, function):
    tamper = tampering(source)
    shown = request.getfixturevalue("shown")  # attention.py, or "your notebook"
    try:
        student = request.getfixturevalue("loaded")
    except StudentFault:
        # what an attack leaves in the source is flagged even when the submission does not load
        _tampering(tamper, shown)
        _fused_source(fused_uses(source), shown)  # and so is torch's attention it reaches for
        raise
    static = fused_uses(source)
    ran = sorted(student.ops.get(function, ()))
    reach = dynamic_reach(source)
    if ran:
        flag(
            f"{function} ran PyTorch's fused attention or its attention written in Python ({', '.join(ran[:3])});"
            " the assignment is to write it yourself",
            "fused_ran",
        )
    _fused_source(static, shown)
    if reach:
        flag(
            f"{shown} reaches into torch's internals or the grader's worker, or builds names at run time"
            f" ({'; '.join(reach[:3])}); the assignment needs none of that",
            "dynamic_reach",
        )
    _tampering(tamper, shown)
    built = dynamic_reach(source, weak=True)
    if built:  # nothing forbidden ran, and nothing in the source reaches for it: evidence to look at, no deduction
        review(
            request,
            f"passed, no points taken; for review: {shown} builds names at run time ({'; '.join(built[:3])})",
            "names_built",
        )


def _fused_source(static: list[str], shown: str) -> None:
    """Flag the submission for the places where its source reaches for torch's attention, fused or in Python."""
    if static:
        flag(
            f"{shown} uses PyTorch's fused attention or its attention written in Python ({'; '.join(static[:3])});"
            " the assignment is to write it yourself",
            "fused_source",
        )


def _tampering(found: dict[str, list[str]], shown: str) -> None:
    """Flag the submission for what an attack leaves in its source, every kind found named, the first as the field."""
    if found:
        said = "; ".join(f"{TAMPERING[key]} ({', '.join(places[:3])})" for key, places in found.items())
        flag(f"{shown} {said}; grading needs none of that", next(iter(found)))


@pytest.mark.check(function="scaled_dot_product_attention", category="integrity", points=2, exercises=(), picture=None)
def test_integrity_sdpa(request, source):
    """No F.scaled_dot_product_attention or other fused attention, in the source or in the ops that ran; no patched
    torch, imported grader or written files in the source.

    Also no reach into torch internals or the worker, and no code built at run time; the ops are recorded in any
    thread. A flag: listed in the class summary for review, even when the submission's other checks fail. What is
    judged is use: a name in a docstring, a comment, ``__all__`` or an ``if __name__ == "__main__":`` block is not;
    a name built at run time (``getattr(self, name)``) is listed for review without taking points.
    """
    _integrity(request, source, "scaled_dot_product_attention")


@pytest.mark.check(function="MultiHeadAttention", category="integrity", points=1, exercises=(), picture=None)
def test_integrity_mha(request, source):
    """No nn.MultiheadAttention or F.multi_head_attention_forward, in the source or in the ops that ran; no patched
    torch, imported grader or written files in the source."""
    _integrity(request, source, "MultiHeadAttention")


def _decide(loaded, reference, draw, settings, shapes, repeat, device="cpu", where=""):
    """Fail unless every shape is within the budget (``timing.judge``: the ratio, then how the cost grows)."""
    timing = settings.timing
    budget, dtype = timing.budget, torch.float32
    options = {"rounds": timing.rounds, "repeat": repeat, "tolerance": settings.tolerance(dtype_name(dtype))}
    options.update(budget=budget, retries=timing.retries, device=device)
    for shape in shapes:
        large = GROWTH_TO.get(shape) if device == "cpu" else None
        try:
            passed, found = judge(loaded, reference, draw, shape, large=large, **options)
        except StudentFault as error:
            # a call that fails on an edge of the shape (a helper that breaks on the head axis, a batch of one
            # squeezed: mistakes that value checks charge) is timed on the same work without it (``folded``)
            try:
                passed, found = judge(loaded, reference, draw, folded(shape), large=large and folded(large), **options)
            except StudentFault:
                fail(f"{error} (in a timed call{where}, on (B, H, T_q, T_k, d) = {shape})")
        if passed:
            if found.wrong:  # raised only within the budget: scoring may carry a known mistake's answers forward
                flag(
                    f"scaled_dot_product_attention gave a wrong answer in a timed call{where}: {found.wrong}"
                    " (every timed call gets fresh inputs, and its answers are checked)",
                    "timed_answer_wrong",
                )
            continue
        forms = over(found, budget, device)
        called = ", ".join(forms[:-1]) + (" and " if forms[1:] else "") + forms[-1]
        fail(f"scaled_dot_product_attention took {_said(found, budget, device)}{where}, called {called}", "python_loop")


def _said(found, budget: float, device: str) -> str:
    """What the measurement that failed found, in words."""
    if found.cpu_ratio > budget and device == "cpu":
        clock = f"{found.cpu_ratio:.1f} times the reference's CPU time"
        allowed = budget
    else:
        clock = f"{found.wall_ratio:.1f} times the reference's time by the clock"
        allowed = budget * (WALL_SLACK if device == "cpu" else 1)
    if found.large:
        return (
            f"{clock} for the work added from (B, H, T_q, T_k, d) = {found.shape} to {found.large} (allowed:"
            f" {allowed:g} times; the cost of a call whatever its size is not counted)"
        )
    return f"{clock} (allowed: {allowed:g} times) on (B, H, T_q, T_k, d) = {found.shape}"


@pytest.mark.check(function="scaled_dot_product_attention", category="timing", points=2, exercises=(), picture=None)
def test_timing_cpu(loaded, reference, draw, settings):
    """On the CPU, the student's attention takes at most `budget` times the reference's time.

    `budget` is 5 by default; 2 x budget by the wall clock too, both measured by the grader, on three shapes made
    for loops over batches, heads and queries; every timed answer must be right (docs/performance.md). A shape over
    the budget is judged by how the cost grows to one 8 times larger, against the reference's growth: work a call
    does whatever its size (a mask built on each call) is not taken for a loop.
    """
    # on shapes where a loop over batches, heads or query positions costs many times more (docs/performance.md)
    _decide(loaded, reference, draw, settings, CPU_SHAPES, CPU_REPEAT)


@pytest.mark.check(function="scaled_dot_product_attention", category="timing", points=2, exercises=(), picture=None)
def test_timing_gpu(gpu, loaded, reference, draw, settings):
    """On a CUDA device: the same budget by the wall clock, the results back in the grader's memory
    (not run without one).

    Without a GPU the check is "not run", and `when_no_gpu` decides what it is worth.
    """
    _decide(loaded, reference, draw, settings, GPU_SHAPES, GPU_REPEAT, device=gpu, where=" on CUDA")
