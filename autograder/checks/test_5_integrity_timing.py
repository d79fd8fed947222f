"""Integrity (no fused attention) and the timing budget. Both run last, after every other call."""

import statistics
import time

import pytest
import torch

from autograder.expect import fail
from autograder.integrity import fused_uses
from reference import attention as ref


def _integrity(student, source, function):
    static = fused_uses(source)
    ran = sorted(student.ops.get(function, ()))
    if ran:
        fail(f"{function} ran PyTorch's fused attention ({', '.join(ran[:3])}); the assignment is to write it yourself")
    if static:
        fail(f"attention.py uses PyTorch's fused attention ({'; '.join(static[:3])}); the assignment is to write it yourself")


@pytest.mark.check(function="scaled_dot_product_attention", category="integrity")
def test_integrity_sdpa(loaded, source):
    """No F.scaled_dot_product_attention or other fused attention, in the source or in the ops that ran."""
    _integrity(loaded, source, "scaled_dot_product_attention")


@pytest.mark.check(function="MultiHeadAttention", category="integrity")
def test_integrity_mha(loaded, source):
    """No nn.MultiheadAttention or F.multi_head_attention_forward, in the source or in the ops that ran."""
    _integrity(loaded, source, "MultiHeadAttention")


def _reference_seconds(args, repeat):
    start = time.perf_counter()
    for _ in range(repeat):
        ref.scaled_dot_product_attention(*args)
    return time.perf_counter() - start


def _median_ratio(loaded, args, repeat, rounds):
    """Median of interleaved student/reference timings after one warm-up of each."""
    loaded.time("scaled_dot_product_attention", *args, repeat=1)
    _reference_seconds(args, 1)
    ratios = []
    for _ in range(rounds):
        student = loaded.time("scaled_dot_product_attention", *args, repeat=repeat)
        ratios.append(student / _reference_seconds(args, repeat))
    return statistics.median(ratios)


@pytest.mark.check(function="scaled_dot_product_attention", category="timing")
def test_timing_cpu(loaded, draw, settings):
    """On the CPU, the student's attention takes at most `budget` times the reference's time."""
    timing = settings["timing"]
    # one long sequence with small heads: a loop over positions costs T times the per-op
    # overhead, while honest variants (einsum, float64 inside, ...) stay within 2x (docs/performance.md)
    B, H, T, d = 1, 1, 256, 16
    args = (draw.normal(B, H, T, d, dtype=torch.float32), draw.normal(B, H, T, d, dtype=torch.float32),
            draw.normal(B, H, T, d, dtype=torch.float32), torch.ones(T, T, dtype=torch.bool).tril())
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the worker computes on one thread too
    try:
        for _ in range(1 + timing["retries"]):
            ratio = _median_ratio(loaded, args, repeat=20, rounds=timing["rounds"])
            if ratio <= timing["budget"]:
                return
    finally:
        torch.set_num_threads(threads)
    fail(f"scaled_dot_product_attention took {ratio:.1f} times as long as the reference (allowed: {timing['budget']:g} times)"
         f" on (B, H, T, d) = {(B, H, T, d)}", "a Python loop over positions or batches; use batched matrix products instead")


@pytest.mark.check(function="scaled_dot_product_attention", category="timing")
def test_timing_gpu(loaded, device):
    """On a CUDA device: the same budget at B=32, H=8, T=1024, d=64 (not run without one)."""
    if device != "cuda" or not torch.cuda.is_available():
        pytest.skip("no CUDA device on this grading machine (run sdpa-grade --device cuda on one)")
    pytest.skip("the CUDA timing check is not implemented yet in this version of the grader")
