"""The blockwise part's memory check against six ways of building the whole (T_q, T_k) matrix unseen by a measure
inside the worker (issue 53): on a thread, in numpy, as int32 bits, in blocks kept alive by their storages, only
when no measure is detected, only off the check's published shape. Each loses blockwise_memory alone, with the
grader's own figure; the reference and a real chunked port keep it. Graded with the worker root and unprivileged."""

from __future__ import annotations

import sysconfig
from pathlib import Path

import pytest

from autograder.config import load_settings
from autograder.sandbox.processes import readable_by_others
from tests.attacks import MODES, checks_of, grade_all, overlaid
from tests.helpers import FAST_LIMITS, ROOT, SUBMISSIONS

ON = FAST_LIMITS + "[parts]\nblockwise_attention = true\n"
POINTS = load_settings(ROOT / "tests" / "blockwise_on.toml", environ={}).points
TOTAL = sum(worth for check, worth in POINTS.items() if check != "timing_gpu")
ATTACKS = [
    "attack_memory_thread",
    "attack_memory_numpy_only",
    "attack_memory_int32_bits",
    "attack_memory_blocks_kept",
    "attack_memory_detected",
    "attack_memory_shape_detected",
]
HONEST = ["reference", "sub_quadratic_chunks"]
# the port's checkpoint imports torch._dynamo on its first call, and with it standard modules no grading needed before
# (cProfile): an unprivileged worker reads them only where Python's standard library is open to other users
STDLIB = Path(sysconfig.get_paths()["stdlib"])


@pytest.fixture(scope="module", params=MODES)
def graded(request, tmp_path_factory):
    """The attacks, the reference and the chunked port graded with the part on, with one zygote in each mode."""
    base = tmp_path_factory.mktemp(f"memory-{request.param}")
    reference = base / "reference.py"
    reference.write_text((ROOT / "reference" / "attention.py").read_text())
    files = [overlaid(base, name) for name in ATTACKS]
    files += [reference, overlaid(base, "sub_quadratic_chunks", SUBMISSIONS / "honest_blockwise")]
    return grade_all(request.param, base, files, limits=ON, timeout=110)["results"]


def _lost(result: dict) -> dict[str, str]:
    return {name: test["output"] for name, test in checks_of(result).items() if test["score"] < test["max_score"]}


@pytest.mark.parametrize("name", ATTACKS)
def test_a_full_matrix_built_out_of_the_workers_sight_loses_the_memory_check_alone(graded, name):
    """The whole process's peak, measured by the grader, shows the matrix whatever thread, library, dtype or lifetime
    made it, and whatever the code could observe; only blockwise_memory's points go."""
    result = graded[name]["result"]
    lost = _lost(result)
    assert list(lost) == ["blockwise_memory"], lost
    assert result["score"] == TOTAL - POINTS["blockwise_memory"]
    message = lost["blockwise_memory"]
    assert "of memory while it ran (the grader's measure of the whole process: every thread and library)" in message
    assert "its inputs and a quarter of the (T_q, T_k) matrix of scores" in message
    assert "compute the scores of one block of keys at a time" in message


@pytest.mark.parametrize("name", HONEST)
def test_blockwise_code_keeps_the_memory_check(request, graded, name):
    """The reference's online softmax and a real port (Rabe & Staats-style chunks under checkpoint) earn every
    point of the part."""
    unprivileged = request.node.callspec.params["graded"] != "root"
    if name != "reference" and unprivileged and not readable_by_others(STDLIB):
        pytest.skip(f"an unprivileged worker cannot read {STDLIB} (a folder above it is closed to others)")
    result = graded[name]["result"]
    assert _lost(result) == {} and result["score"] == TOTAL
