"""Gradescope's default container (0.5 CPU, 768 MB) as a tested condition: a cold grading in a
cgroup of the test's own with those limits (bench/small_container.py) grades as on a full machine, and stays under
600 MiB, sandboxes included."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from autograder.checks.quiz import BY_NAME as QUESTIONS
from autograder.config import load_settings
from bench.small_container import SmallBox, grade
from bench.timing_reliability import submission
from tests.helpers import REFERENCE, quiz_points

POINTS = load_settings(environ={}).points
FULL = sum(points for check, points in POINTS.items() if check != "timing_gpu")  # no GPU in the container
PEAK_MIB = 600
# the least slow loop the timing check must catch (a loop over queries only when called without a mask: about 19
# times the reference's CPU time on that call form, docs/performance.md), and the cheapest to grade
LOOP = "mistake_loop_only_without_mask"


@pytest.fixture(scope="module")
def small_box():
    """Skips where this grader may not make a cgroup with a CPU quota and a memory cap (no delegation)."""
    probe = SmallBox("probe")
    if probe.reason:
        pytest.skip(f"no small container here: {probe.reason}")
    probe.close()


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_half_a_cpu_and_768_mb_grade_as_a_full_machine(small_box, tmp_path):
    """Under 0.5 CPU and 768 MiB (no swap), the reference gets full points, the CPU timing check passes and the GPU
    one is not run; a loop over queries (when called without a mask) loses the timing points alone; the whole
    grading's memory, sandboxes included, peaks under 600 MiB."""
    with ThreadPoolExecutor(2) as both:  # two containers side by side, as Gradescope runs them: half the wall time
        graded = both.submit(grade, REFERENCE, "reference", tmp_path / "reference")
        looped = both.submit(grade, submission(LOOP, tmp_path), LOOP, tmp_path / "loop")
        correct, loop = graded.result(), looped.result()
    assert not correct.error, correct.error
    assert correct.max_score == FULL + quiz_points() and correct.score == FULL, (correct.lost, correct.verdicts)
    assert correct.verdicts["timing_cpu"][0] == "passed", correct.verdicts
    assert correct.verdicts["timing_gpu"][0] == "not-run", correct.verdicts
    assert correct.nested > 0, "the sandbox's groups were not below the container's: its peak would miss them"
    assert not loop.error, loop.error
    assert [check for check in loop.lost if check not in QUESTIONS] == ["timing_cpu"], (loop.lost, loop.verdicts)
    assert loop.max_score == FULL + quiz_points() and loop.score == FULL - POINTS["timing_cpu"], loop.verdicts
    assert "Python loop" in loop.verdicts["timing_cpu"][1], loop.verdicts
    assert loop.verdicts["timing_gpu"][0] == "not-run", loop.verdicts
    for found in (correct, loop):
        assert found.peak_mib is not None and found.peak_mib < PEAK_MIB, found.peak_mib
