"""The memory a student's call allocates, measured in the worker (sandbox/student_side/recording.py ``_Memory``), and
the blockwise part's memory check that reads it: the reference passes, a version that builds the (T_q, T_k) matrix
loses that check alone, and a source that takes the grader's dispatch modes off torch's stack is not vouched for."""

from __future__ import annotations

import json
import math

import pytest
import torch

from autograder.sandbox.protocol import Failure, reply_from
from reference import attention as ref
from tests.helpers import BIN, run, with_overlay
from tests.in_process import InProcess

T_q, T_k, d_k, d_v, BLOCK = 32, 256, 8, 8, 16
UNITS = T_q * (d_k + d_v + BLOCK) * 4  # bytes of T_q x (d_k + d_v + block_size) float32 values


def full_matrix(Q, K, V, mask=None, is_causal=False, block_size=16):
    """Right values from the whole (T_q, T_k) matrix of scores: what the part forbids."""
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1))
    if is_causal:
        causal = torch.ones(Q.size(-2), K.size(-2), dtype=torch.bool).tril()
        mask = causal if mask is None else mask & causal
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1).nan_to_num(0.0) @ V


def measured(function, *args, **kwargs):
    reply = InProcess({"blockwise_attention": function}).call(
        "blockwise_attention", args, kwargs, timeout=10, memory=True
    )
    assert reply.ok, reply.describe()
    return reply.memory


@pytest.mark.parametrize("lead", [(), (2, 3)])
@pytest.mark.parametrize("case", ["plain", "causal", "mask"])
def test_the_reference_stays_within_its_blocks_and_the_full_matrix_does_not(lead, case):
    per = math.prod(lead)
    Q, K, V = torch.randn(*lead, T_q, d_k), torch.randn(*lead, T_k, d_k), torch.randn(*lead, T_k, d_v)
    args = {"causal": (None, True), "mask": (torch.rand(T_q, T_k) > 0.3, False), "plain": (None, False)}[case]
    ours, theirs = measured(ref.blockwise_attention, Q, K, V, *args, BLOCK), measured(full_matrix, Q, K, V, *args)
    assert ours.largest == per * T_q * BLOCK and ours.op.startswith(("aten.mm", "aten.bmm"))
    assert ours.peak_bytes <= 2.5 * per * UNITS  # the reference's 2.4 (check_6_blockwise.PEAK_UNITS allows 5)
    assert theirs.largest >= per * T_q * T_k and theirs.peak_bytes >= 8 * per * UNITS


def test_inputs_views_in_place_results_and_masks_do_not_count():
    def views(Q, K, V, mask=None, is_causal=False, block_size=16):
        K.transpose(-2, -1)[..., :4]  # a view of an input: its storage is the input's
        out = Q.new_zeros(Q.shape[:-1] + (V.size(-1),))  # one new storage ...
        out.add_(1.0).mul_(2.0)  # ... that in-place results share
        out[..., :1].zero_()
        torch.ones(T_q, T_k, dtype=torch.bool).tril()  # a full mask: boolean, not counted
        return out

    Q, K, V = torch.randn(T_q, d_k), torch.randn(T_k, d_k), torch.randn(T_k, d_v)
    memory = measured(views, Q, K, V)
    assert memory.largest == T_q * d_v and memory.peak_bytes == T_q * d_v * 4
    assert memory.shape == (T_q, d_v) and memory.op == "aten.new_zeros.default"


def test_bytes_are_released_when_the_last_tensor_holding_them_goes():
    def one_block_at_a_time(Q, K, V, mask=None, is_causal=False, block_size=16):
        total = Q.new_zeros(())
        for start in range(0, K.size(-2), block_size):
            block = Q @ K[start : start + block_size].T  # (T_q, block): freed before the next one
            total = total + block.sum()
        return total.expand(Q.size(0), V.size(-1))

    Q, K, V = torch.randn(T_q, d_k), torch.randn(T_k, d_k), torch.randn(T_k, d_v)
    memory = measured(one_block_at_a_time, Q, K, V)
    assert memory.largest == T_q * BLOCK and memory.peak_bytes < 3 * T_q * BLOCK * 4


def test_a_measure_that_is_not_plain_numbers_is_a_wire_failure():
    good = {"ok": True, "value": None, "memory": {"largest": 4, "shape": [2, 2], "op": "aten.mm", "peak_bytes": 16}}
    assert reply_from(good, 0.0).memory.shape == (2, 2)
    for bad in ({"largest": -1}, {**good["memory"], "shape": "big"}, {**good["memory"], "peak_bytes": 1.5}, []):
        reply = reply_from({**good, "memory": bad}, 0.0)
        assert not reply.ok and reply.failure is Failure.WIRE, bad


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The reference, the full-matrix version and the attack on the measure, graded with the part on."""
    folder, out = tmp_path_factory.mktemp("class"), tmp_path_factory.mktemp("out")
    for name, overlay in (
        ("reference", None),
        ("full_matrix", "blockwise_full_matrix"),
        ("unmeasured", "attack_blockwise_unmeasured"),
        ("numpy", "attack_blockwise_numpy"),
    ):
        (folder / f"{name}.py").write_text(with_overlay(overlay))
    config = folder.parent / "on.toml"
    config.write_text("[parts]\nblockwise_attention = true\n")
    args = [
        str(BIN / "sdpa-grade"),
        "batch",
        str(folder),
        "--config",
        str(config),
        "--jobs",
        "2",
        "--json-dir",
        str(out),
    ]
    result = run(args, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    return {path.stem: json.loads(path.read_text()) for path in out.glob("*.json")}


def _lost(result) -> dict[str, str]:
    return {t["extra_data"]["check"]: t["output"] for t in result["tests"] if t["score"] < t["max_score"]}


@pytest.mark.slow
def test_the_reference_earns_the_whole_part(graded):
    assert _lost(graded["reference"]) == {} and graded["reference"]["score"] == 70


@pytest.mark.slow
def test_building_the_whole_matrix_loses_the_memory_check_alone(graded):
    lost = _lost(graded["full_matrix"])
    assert list(lost) == ["blockwise_memory"] and graded["full_matrix"]["score"] == 68
    assert "created a tensor of 8192 elements (first seen as shape (32, 256)" in lost["blockwise_memory"]
    assert "compute the scores of one block of keys at a time" in lost["blockwise_memory"]


@pytest.mark.slow
def test_taking_the_measure_off_torchs_stack_is_flagged_and_not_vouched_for(graded):
    lost = _lost(graded["unmeasured"])
    assert set(lost) == {"integrity_sdpa", "integrity_mha", "blockwise_memory"}
    assert lost["blockwise_memory"].startswith("blockwise_attention's memory is not vouched for")


@pytest.mark.slow
def test_a_matrix_made_in_numpy_is_seen_by_the_first_op_on_it(graded):
    lost = _lost(graded["numpy"])
    assert set(lost) == {"blockwise_memory"}
    assert "created a tensor of 8192 elements" in lost["blockwise_memory"]
