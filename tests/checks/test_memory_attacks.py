"""The blockwise part's memory check against six ways of building the whole (T_q, T_k) matrix unseen by a measure
inside the worker (issue 53): on a thread, in numpy, as int32 bits, in blocks kept alive by their storages, only
when no measure is detected, only off the check's published shape; and a seventh, in a forked process that ends
before the call returns. Each loses blockwise_memory alone, with the grader's own figure or the reason it could not
measure; the reference and a real chunked port keep it. An eighth writes the matrix in place into memory it took at
import, which adds nothing to the process's peak: the grader's count of the pages the call touched shows it. Four more
build it where neither the peak nor the touched pages see it: in room the call freed (taken again between calls by a
thread of its own, or taken at import), or unmapped in tmpfs files or memfds; the kernel's count of the pages charged
to the sandbox shows them. Three park it in kernel memory, which no page count sees: in pipes or Unix socket pairs
made by the call, or in pipes filled at import; the kernel memory the sandbox held during the call, above what it held
before any student code ran, shows them. Graded with the worker root and unprivileged."""

from __future__ import annotations

import sysconfig
from pathlib import Path

import pytest

from autograder.config import load_settings
from autograder.sandbox.processes import readable_by_others
from tests.attacks import checks_of, overlaid
from tests.graded import Sandboxed, worker_of
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
    "attack_memory_reserved",  # the matrix written in place into memory taken at import: no rise, every page touched
    # the room for the matrix freed by a call and taken again by a thread of its own between calls: no rise, and none
    # of the matrix's pages left when the call returns; the kernel charged the sandbox for them while the call ran
    "attack_memory_between_calls",
    # the same with eight rooms taken at import, one freed by each call: nothing runs between calls
    "attack_memory_rooms_at_import",
    "attack_memory_tmpfs",  # the matrix in files of the sandbox's tmpfs, never mapped: the kernel charged them
    "attack_memory_memfd",  # the matrix in memfds, never mapped: the kernel charged them
    # the matrix parked in kernel memory, no page of any process or file: the buffers of pipes, of Unix socket pairs;
    # the kernel memory the sandbox held while the call ran shows it
    "attack_memory_pipes",
    "attack_memory_sockets",
    # the same in pipes filled at import, drained and filled again by each call: no rise above the call's start, but
    # above what the sandbox held before any student code ran
    "attack_memory_pipes_at_import",
]
# a seventh: the matrix built in a forked child process that ends before the call returns
FORKED = "attack_memory_forked"
HONEST = ["reference", "sub_quadratic_chunks"]
# the port's checkpoint imports torch._dynamo on its first call, and with it standard modules no grading needed before
# (cProfile): an unprivileged worker reads them only where Python's standard library is open to other users
STDLIB = Path(sysconfig.get_paths()["stdlib"])


def _files(base: Path) -> list[Path]:
    """The reference itself, the chunked port and each attack, appended to the reference, as files under ``base``."""
    reference = base / "reference.py"
    reference.write_text((ROOT / "reference" / "attention.py").read_text())
    attacks = [overlaid(base, name) for name in [*ATTACKS, FORKED]]
    ports = [overlaid(base, name, SUBMISSIONS / "honest_blockwise") for name in HONEST if name != "reference"]
    return [reference, *ports, *attacks]


# every file graded with the part on, the worker root or unprivileged, in parts of at most four with a zygote each
# (the graded fixture): the attacks four at a time, then the honest code; one zygote a file started 28 Pythons and 28
# zygotes for 14 files in two modes
PART = 4
GRADED = Sandboxed(
    _files,
    limits=ON,
    parts=(*(tuple([*ATTACKS, FORKED][at : at + PART]) for at in range(0, len(ATTACKS) + 1, PART)), tuple(HONEST)),
)


def _lost(result: dict) -> dict[str, str]:
    return {name: test["output"] for name, test in checks_of(result).items() if test["score"] < test["max_score"]}


@GRADED.each(ATTACKS)
def test_a_full_matrix_built_out_of_the_workers_sight_loses_the_memory_check_alone(graded, name):
    """The whole process's peak, the pages the call touched, the pages charged to the sandbox and the kernel memory it
    held, measured by the grader, show the matrix whatever thread, library, dtype, lifetime, memory taken beforehand or
    kernel buffer held it, and whatever the code could observe; only blockwise_memory's points go."""
    result = graded["results"][name]["result"]
    lost = _lost(result)
    assert list(lost) == ["blockwise_memory"], lost
    assert result["score"] == TOTAL - POINTS["blockwise_memory"]
    message = lost["blockwise_memory"]
    assert "of memory while it ran (the grader's measure of the whole process: every thread and library)" in message
    assert "the same on inputs drawn before these" in message
    assert "its inputs and half the (T_q, T_k) matrix of scores" in message
    assert "compute the scores of one block of keys at a time" in message


@GRADED.each([FORKED])
def test_a_matrix_built_in_a_process_that_ends_during_the_call_loses_the_memory_check_alone(graded, name):
    """A process that ran and ended during the call took memory nobody can read any more: the check says so."""
    result = graded["results"][name]["result"]
    lost = _lost(result)
    assert list(lost) == ["blockwise_memory"], lost
    assert result["score"] == TOTAL - POINTS["blockwise_memory"]
    assert "ran another process that ended during the call (os.fork, multiprocessing)" in lost["blockwise_memory"]


@GRADED.each(HONEST)
def test_blockwise_code_keeps_the_memory_check(request, graded, name):
    """The reference's online softmax and a real port (Rabe & Staats-style chunks under checkpoint) earn every
    point of the part."""
    mode = worker_of(request.node.callspec.params["graded"])
    if name != "reference" and mode != "root" and not readable_by_others(STDLIB):
        pytest.skip(f"an unprivileged worker cannot read {STDLIB} (a folder above it is closed to others)")
    result = graded["results"][name]["result"]
    assert _lost(result) == {} and result["score"] == TOTAL
