"""Integrity (no fused attention) and the timing budget. Both run last, after every other call."""

import statistics
import time

import pytest
import torch

from autograder.checks.expect import dtype_name, fail
from autograder.checks.integrity import fused_uses
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
    copies = [[a.clone() for a in args] for _ in range(repeat)]  # the same copies as the worker's timing loop
    for copy in copies:
        ref.scaled_dot_product_attention(*copy)
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
         f" on (B, H, T, d) = {(B, H, T, d)}", "python_loop")


def _randn_spec(shape, dtype, seed, device):
    """A tensor the worker draws itself (large inputs never cross the socket), and the same one here."""
    spec = {"$randn": list(shape), "dtype": dtype_name(dtype), "seed": seed, "device": device}
    local = torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype).to(device)
    return spec, local


def _cuda_seconds(args, repeat):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    copies = [[a.clone() for a in args] for _ in range(repeat)]  # the same copies as the worker's timing loop
    for copy in copies:
        ref.scaled_dot_product_attention(*copy)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 1000


@pytest.mark.check(function="scaled_dot_product_attention", category="timing")
def test_timing_gpu(gpu, loaded, draw, settings):
    """On a CUDA device: the same budget at B=32, H=8, T=1024, d=64, in float16 and float32 (not run without one)."""
    timing = settings["timing"]
    shape = (32, 8, 1024, 64)
    for dtype in (torch.float16, torch.float32):
        pairs = [_randn_spec(shape, dtype, draw.integer(0, 2**31), "cuda") for _ in range(3)]
        specs, local = [p[0] for p in pairs], [p[1] for p in pairs]
        repeat = 10
        for _ in range(1 + timing["retries"]):
            loaded.time("scaled_dot_product_attention", *specs, repeat=1)  # warm-up, and the worker draws its inputs
            _cuda_seconds(local, 1)
            ratios = []
            for _ in range(timing["rounds"]):
                # the worker synchronises before it answers; our clock bounds the whole round trip
                student = loaded.time("scaled_dot_product_attention", *specs, repeat=repeat)
                ratios.append(student / _cuda_seconds(local, repeat))
            ratio = statistics.median(ratios)
            if ratio <= timing["budget"]:
                break
        else:
            fail(f"on CUDA in {str(dtype).removeprefix('torch.')}, scaled_dot_product_attention took {ratio:.1f} times as"
                 f" long as the reference (allowed: {timing['budget']:g} times) at (B, H, T, d) = {shape}",
                 "python_loop")
