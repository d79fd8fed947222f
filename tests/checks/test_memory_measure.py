"""The memory a student's call takes, measured by the grader from outside the worker (sandbox/memory.py: the student's
process's peak resident set, reset and read around every call), the worker's record of the largest tensor a call made
(recording.py ``_Memory``: words only), and the blockwise part's memory check that reads them: the reference passes, a
version that builds the (T_q, T_k) matrix loses that check alone, whatever it reaches or imports."""

from __future__ import annotations

import dataclasses
import math
import re
import statistics

import pytest
import torch

from autograder.config import load_settings
from autograder.sandbox.client import Sandbox
from autograder.sandbox.protocol import MEMORY_FIELDS, Failure, Reply, reply_from
from reference import attention as ref
from tests.graded import Batch
from tests.helpers import checks_of, with_overlay
from tests.in_process import InProcess

T_q, T_k, d_k, d_v, BLOCK = 32, 256, 8, 8, 16


def full_matrix(Q, K, V, mask=None, is_causal=False, block_size=16):
    """Right values from the whole (T_q, T_k) matrix of scores: what the part forbids."""
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1))
    if is_causal:
        causal = torch.ones(Q.size(-2), K.size(-2), dtype=torch.bool).tril()
        mask = causal if mask is None else mask & causal
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1).nan_to_num(0.0) @ V


def recorded(function, *args, **kwargs):
    reply = InProcess({"blockwise_attention": function}).call("blockwise_attention", args, kwargs, timeout=10)
    assert reply.ok, reply.describe()
    return reply.memory


@pytest.mark.parametrize("lead", [(), (2, 3)])
def test_the_record_names_the_largest_tensor_a_call_made(lead):
    """The reference's largest tensor is one block of scores, made by a matmul; the full matrix's is the matrix."""
    per = math.prod(lead)
    Q, K, V = torch.randn(*lead, T_q, d_k), torch.randn(*lead, T_k, d_k), torch.randn(*lead, T_k, d_v)
    ours, theirs = recorded(ref.blockwise_attention, Q, K, V, None, False, BLOCK), recorded(full_matrix, Q, K, V)
    assert ours.largest == per * T_q * BLOCK and ours.op.startswith(("aten.mm", "aten.bmm"))
    assert theirs.largest >= per * T_q * T_k and math.prod(theirs.shape) == per * T_q * T_k


def test_inputs_views_in_place_results_and_masks_do_not_count():
    """A view of an input, in-place results on one new storage and a boolean mask: the record names the one new
    floating-point storage."""

    def views(Q, K, V, mask=None, is_causal=False, block_size=16):
        K.transpose(-2, -1)[..., :4]  # a view of an input: its storage is the input's
        out = Q.new_zeros(Q.shape[:-1] + (V.size(-1),))  # one new storage ...
        out.add_(1.0).mul_(2.0)  # ... that in-place results share
        out[..., :1].zero_()
        torch.ones(T_q, T_k, dtype=torch.bool).tril()  # a full mask: boolean, not counted
        return out

    Q, K, V = torch.randn(T_q, d_k), torch.randn(T_k, d_k), torch.randn(T_k, d_v)
    memory = recorded(views, Q, K, V)
    assert memory.largest == T_q * d_v and memory.shape == (T_q, d_v) and memory.op == "aten.new_zeros.default"


def test_a_record_that_is_not_plain_numbers_is_a_wire_failure():
    """The worker's record crosses as plain numbers and a short name, or the call is a wire failure."""
    good = {"ok": True, "value": None, "memory": {"largest": 4, "shape": [2, 2], "op": "aten.mm"}}
    assert reply_from(good, 0.0).memory.shape == (2, 2)
    for bad in ({"largest": -1}, {**good["memory"], "shape": "big"}, {**good["memory"], "op": "x" * 201}, []):
        reply = reply_from({**good, "memory": bad}, 0.0)
        assert not reply.ok and reply.failure is Failure.WIRE, bad


def test_a_worker_cannot_claim_a_measure():
    """What a call took is the runner's own reading: a worker's answer that names one is not believed."""
    answer = {"ok": True, "value": None, "grown_bytes": 0, "touched_bytes": 0, "charged_bytes": 0, "kernel_bytes": 0}
    reply = reply_from({**answer, "unmeasured": ""}, 0.0)
    assert reply.grown_bytes is None and reply.touched_bytes is None and reply.charged_bytes is None
    assert reply.kernel_bytes is None
    assert reply.unmeasured


def test_a_substituted_memory_check_takes_every_figure_of_the_students_own_call():
    """A memory check run again with a function it builds on answered by the reference (checks/substitution.py) is
    measured on the student's own call: every figure of that call's memory crosses (``MEMORY_FIELDS``), a figure
    added to the reply included (the kernel's count was left behind once: a pipe-parked matrix unseen in a rerun)."""
    figures = {f.name for f in dataclasses.fields(Reply) if f.name.endswith("_bytes")}
    assert figures <= set(MEMORY_FIELDS), sorted(figures - set(MEMORY_FIELDS))
    assert {"unmeasured", "ran_processes", "memory"} <= set(MEMORY_FIELDS)


# Calls whose memory the grader must see however it is taken: MiB held at once, by a thread, by numpy, as int32
TAKERS = """
import fcntl
import os
import socket
import threading
import numpy
import torch


def in_a_thread(Q):
    held = []
    worker = threading.Thread(target=lambda: held.append(torch.ones(int(Q.size(0)) << 18)))
    worker.start()
    worker.join()
    return Q.sum()


def in_numpy(Q):
    held = numpy.ones(int(Q.size(0)) << 17)  # float64
    return Q.sum() + float(held[0])


def as_int32(Q):
    held = torch.ones(int(Q.size(0)) << 18, dtype=torch.int32)
    return Q.sum() + held[0]


def in_blocks(Q):
    total = Q.new_zeros(())
    for _ in range(int(Q.size(0))):
        block = torch.ones(1 << 18)  # 1 MiB, gone before the next
        total = total + block[0]
    return total


def in_memfds(Q):
    chunk = bytes(1 << 18)  # 256 KiB a file: RLIMIT_FSIZE caps each there
    files = [os.memfd_create("held") for _ in range(int(Q.size(0)) * 4)]
    for descriptor in files:
        os.pwrite(descriptor, chunk, 0)
    for descriptor in files:
        os.close(descriptor)
    return Q.sum()


_room = []


def take_room(Q):
    _room[:] = [torch.ones(int(Q.size(0)) << 18)]
    return Q.sum()


def in_freed_room(Q):
    _room.clear()  # the room the call before took, freed
    held = torch.ones(int(Q.size(0)) << 18)
    return Q.sum() + held[0]


def _pipe():
    read_end, write_end = os.pipe()
    try:
        fcntl.fcntl(write_end, 1031, 1 << 20)  # F_SETPIPE_SZ: 1 MiB where the kernel lets this user
    except OSError:
        pass
    return read_end, write_end


def _socket_pair():
    return tuple(end.detach() for end in socket.socketpair())


def _parked_in(make, mib):
    # kernel buffers, each filled until full (its writing end never blocks), holding mib MiB together
    pairs, left = [], mib << 20
    while left > 0:
        pairs.append(make())
        os.set_blocking(pairs[-1][1], False)
        try:
            while left > 0:
                left -= os.write(pairs[-1][1], bytes(min(left, 1 << 16)))
        except BlockingIOError:
            pass
    return pairs


def _close(pairs):
    for pair in pairs:
        for end in pair:
            os.close(end)


def in_pipes(Q):
    _close(_parked_in(_pipe, int(Q.size(0))))
    return Q.sum()


def in_sockets(Q):
    _close(_parked_in(_socket_pair, int(Q.size(0))))
    return Q.sum()


_parked = []


def park_in_pipes(Q):
    _parked[:] = _parked_in(_pipe, int(Q.size(0)))
    return Q.sum()


def let_go(Q):
    _close(_parked)
    _parked.clear()
    return Q.sum()


def refill_parked(Q):
    # each pipe drained, then filled again: the kernel memory never rises above the call's start
    for read_end, write_end in _parked:
        os.set_blocking(read_end, False)
        size = 0
        try:
            while True:
                size += len(os.read(read_end, 1 << 16))
        except BlockingIOError:
            pass  # empty
        view = memoryview(bytes(size))
        while view:
            view = view[os.write(write_end, view) :]
    return Q.sum()
"""


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    """The takers above, loaded in a real worker."""
    path = tmp_path_factory.mktemp("takers") / "attention.py"
    path.write_text(TAKERS)
    limits = dataclasses.asdict(load_settings(environ={}).limits)
    with Sandbox(path, limits, imports=load_settings(environ={}).imports.allowed) as box:
        assert box.load().ok, box.load_reply.describe()
        yield box


def _grown(sandbox, target: str, mib: int) -> int:
    reply = sandbox.call(target, (torch.zeros(mib, 2),), timeout=30)
    assert reply.ok and reply.grown_bytes is not None, (reply.describe(), reply.unmeasured)
    return reply.grown_bytes


@pytest.mark.parametrize("target", ["in_a_thread", "in_numpy", "as_int32"])
def test_the_grader_sees_memory_taken_by_any_thread_library_or_dtype(sandbox, target):
    """N MiB held at once, however it is held, rises the process's peak by about N MiB; the same call with N = 1
    does not."""
    grown = {}
    for mib in (1, 48):
        grown[mib] = statistics.median(_grown(sandbox, target, mib) for _ in range(3)) / 2**20
    print(f"{target}: median growth for 1 MiB {grown[1]:.1f} MiB, for 48 MiB {grown[48]:.1f} MiB")
    assert grown[48] >= 46 and grown[1] < 8, grown


def test_memory_freed_block_by_block_is_not_counted_again(sandbox):
    """48 blocks of 1 MiB, each gone before the next: the peak rises by a few MiB, not 48."""
    readings = [_grown(sandbox, "in_blocks", 48) for _ in range(3)]
    print(f"in_blocks: median growth {statistics.median(readings) / 2**20:.1f} MiB")
    assert statistics.median(readings) < 8 * 2**20, readings


@pytest.mark.parametrize("target", ["in_memfds", "in_freed_room"])
def test_the_kernel_charges_memory_the_peak_and_the_pages_cannot_see(sandbox, target):
    """N MiB kept in memfds, or taken in room the call freed (taken by the call before), leave the peak flat and no
    page to count; the pages the kernel charged the sandbox show about N MiB for N = 48, a few for N = 1."""
    if sandbox._peak.stat is None:
        pytest.skip("no cgroup v1 memory group counts the pages charged to the sandbox here")
    charged = {}
    for mib in (1, 48):
        replies = []
        for _ in range(3):
            sandbox.call("take_room", (torch.zeros(mib, 2),), timeout=30)
            replies.append(sandbox.call(target, (torch.zeros(mib, 2),), timeout=30, pages=True))
        assert all(reply.ok and reply.charged_bytes is not None for reply in replies), replies[0].unmeasured
        charged[mib] = statistics.median(reply.charged_bytes for reply in replies) / 2**20
        unseen = statistics.median(max(reply.grown_bytes, reply.touched_bytes) for reply in replies) / 2**20
    print(f"{target}: median charged for 1 MiB {charged[1]:.1f} MiB, for 48 MiB {charged[48]:.1f} MiB")
    assert charged[48] >= 46 and charged[1] < 8 and unseen < 8, (charged, unseen)


def _unseen(reply) -> float:
    """The most of the figures other than the kernel memory, in MiB."""
    return max(reply.grown_bytes, reply.touched_bytes, reply.charged_bytes or 0) / 2**20


@pytest.mark.parametrize("target", ["in_pipes", "in_sockets"])
def test_the_kernel_memory_the_sandbox_holds_shows_pipe_and_socket_buffers(sandbox, target):
    """N MiB parked in pipes or Unix socket buffers are kernel memory: no process's page, no page charged as user
    memory; the sandbox's kernel memory shows about N MiB for N = 48, a few for N = 1."""
    if sandbox._peak.kernel is None:
        pytest.skip("no cgroup v1 memory group counts the sandbox's kernel memory here")
    kernel, unseen = {}, {}
    for mib in (1, 48):
        replies = [sandbox.call(target, (torch.zeros(mib, 2),), timeout=30, pages=True) for _ in range(3)]
        assert all(reply.ok and reply.kernel_bytes is not None for reply in replies), replies[0].unmeasured
        kernel[mib] = statistics.median(reply.kernel_bytes for reply in replies) / 2**20
        unseen[mib] = statistics.median(_unseen(reply) for reply in replies)
    print(f"{target}: median kernel memory for 1 MiB {kernel[1]:.1f} MiB, for 48 MiB {kernel[48]:.1f} MiB")
    assert kernel[48] >= 46 and kernel[1] < 8 and unseen[48] < 8, (kernel, unseen)


def test_kernel_memory_held_from_before_the_call_counts_in_it(sandbox):
    """48 MiB parked in pipes by an earlier call, drained and filled again by this one, never rise above the call's
    start: counted all the same (above what the sandbox held before any student code ran), and no longer once they
    are let go."""
    if sandbox._peak.kernel is None:
        pytest.skip("no cgroup v1 memory group counts the sandbox's kernel memory here")
    replies = [sandbox.call("park_in_pipes", (torch.zeros(48, 2),), timeout=30)]
    held = [sandbox.call("refill_parked", (torch.zeros(1, 2),), timeout=30, pages=True) for _ in range(3)]
    replies.append(sandbox.call("let_go", (torch.zeros(1, 2),), timeout=30))
    after = [sandbox.call("refill_parked", (torch.zeros(1, 2),), timeout=30, pages=True) for _ in range(3)]
    assert all(reply.ok for reply in replies + held + after), [reply.describe() for reply in replies + held + after]
    kernel = [statistics.median(reply.kernel_bytes for reply in replies) / 2**20 for replies in (held, after)]
    unseen = statistics.median(_unseen(reply) for reply in held)
    print(f"refill_parked: median kernel memory with 48 MiB parked {kernel[0]:.1f} MiB, after {kernel[1]:.1f} MiB")
    assert kernel[0] >= 46 and kernel[1] < 8 and unseen < 8, (kernel, unseen)


def _measured(folder):
    for name, overlay in (
        ("reference", None),
        ("full_matrix", "blockwise_full_matrix"),
        ("unmeasured", "attack_blockwise_unmeasured"),
        ("numpy", "attack_blockwise_numpy"),
    ):
        (folder / f"{name}.py").write_text(with_overlay(overlay))


def _part_on(base):
    (base / "on.toml").write_text("[parts]\nblockwise_attention = true\n")
    return ["--config", str(base / "on.toml"), "--jobs", "2"]


# the reference, the full-matrix version and the attack on the measure, graded with the part on (the graded fixture)
GRADED = Batch(_measured, _part_on, timeout=600)


def _lost(result) -> dict[str, str]:
    return {t["extra_data"]["check"]: t["output"] for t in checks_of(result) if t["score"] < t["max_score"]}


def _shape(text: str) -> tuple[int, ...]:
    """A shape as a message prints it, "(2, 3)", as numbers."""
    return tuple(int(n) for n in text.strip("()").split(", "))


MEASURED = "of memory while it ran (the grader's measure of the whole process: every thread and library)"


@pytest.mark.slow
def test_the_reference_earns_the_whole_part(graded):
    """The reference keeps every point of the part, blockwise_memory included."""
    assert graded["result"].returncode == 0, graded["result"].stderr[-2000:]
    assert _lost(graded["results"]["reference"]) == {} and graded["results"]["reference"]["score"] == 70


@pytest.mark.slow
def test_building_the_whole_matrix_loses_the_memory_check_alone(graded):
    """The matrix built whole, then sliced: the grader's figure, and the worker's record names the matrix."""
    lost = _lost(graded["results"]["full_matrix"])
    assert list(lost) == ["blockwise_memory"] and graded["results"]["full_matrix"]["score"] == 68
    message = lost["blockwise_memory"]
    queries, keys = (
        _shape(text) for text in re.search(r"inputs of shape (\([\d, ]+\)) and (\([\d, ]+\))", message).groups()
    )
    named, op = re.search(
        r"the largest tensor its torch ops made: shape (\([\d, ]+\)), by (\S+?)[;.] ", message
    ).groups()
    assert MEASURED in message and op in ("aten.mm.default", "aten.bmm.default")
    assert (
        math.prod(_shape(named)) == math.prod(queries[:-1]) * keys[-2]
    )  # the (T_q, T_k) matrix of each batch and head
    assert "compute the scores of one block of keys at a time" in lost["blockwise_memory"]


@pytest.mark.slow
def test_taking_the_record_off_torchs_stack_is_flagged_and_measured_all_the_same(graded):
    """Popping the worker's dispatch modes hides nothing from the grader's measure of the process."""
    lost = _lost(graded["results"]["unmeasured"])
    assert set(lost) == {"integrity_sdpa", "integrity_mha", "blockwise_memory"}
    assert MEASURED in lost["blockwise_memory"]


@pytest.mark.slow
def test_a_matrix_made_in_numpy_is_measured(graded):
    """A matrix numpy makes is the process's memory: the check fails it."""
    lost = _lost(graded["results"]["numpy"])
    assert set(lost) == {"blockwise_memory"} and MEASURED in lost["blockwise_memory"]
