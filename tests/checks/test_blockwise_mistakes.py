"""The optional blockwise part's named mistakes (checks/mistakes.py ``blockwise_variants``), each a submission under
tests/submissions/overlays/: with the part on, each loses exactly its checks, on every seed tried, and its feedback
names it. The part's checks run in this process (tests/in_process.py), the memory check's measure included; each
submission is also graded once for real, through ``sdpa-grade batch`` and its sandbox (slow). Many seeds are
bench/blockwise_mistakes.py's (its table is in docs/grading.md). The full-matrix version and the attack on the
measure are tests/checks/test_memory_measure.py's."""

from __future__ import annotations

import json

import pytest

from tests.blockwise_mistakes import GATES, MISTAKES, ON, SENTENCE, SETTINGS, VALUES, graded, holds
from tests.helpers import BIN, checks_of, run, with_overlay


def test_the_reference_loses_nothing():
    assert {check: lost for check, (lost, _, _) in graded(None, 0).items() if lost} == {}


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("seed", "overlay"), list(enumerate(sorted(MISTAKES))))
def test_a_blockwise_mistake_loses_its_checks_and_is_named(seed, overlay):
    """Each mistake on a seed of its own (the seven cover seeds 0 to 6; bench/blockwise_mistakes.py tries each on
    50)."""
    holds(overlay, seed)


@pytest.fixture(scope="module")
def sandboxed(tmp_path_factory):
    """Each mistake's submission graded with the part on through the real command: file stem -> its results."""
    folder, out = tmp_path_factory.mktemp("class"), tmp_path_factory.mktemp("out")
    for overlay in MISTAKES:
        (folder / f"{overlay}.py").write_text(with_overlay(overlay))
    args = [str(BIN / "sdpa-grade"), "batch", str(folder), "--config", str(ON), "--jobs", "2", "--json-dir", str(out)]
    result = run(args, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    return {path.stem: json.loads(path.read_text()) for path in out.glob("*.json")}


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("overlay", sorted(MISTAKES))
def test_a_blockwise_mistake_graded_in_the_sandbox_loses_its_checks_and_is_named(sandboxed, overlay):
    """The real grading agrees with the in-process one: the same checks lost, the mistake named in the feedback."""
    always, maybe = MISTAKES[overlay]
    tests = {t["extra_data"]["check"]: t for t in checks_of(sandboxed[overlay])}  # the quiz: not in an attention.py
    lost = {check for check, t in tests.items() if t["score"] < t["max_score"]}
    assert always <= lost <= always | maybe, lost
    values = lost - GATES - {"blockwise_gradients"}
    named = {check for check in values if tests[check]["extra_data"].get("mistake") == overlay.removeprefix("mistake_")}
    assert named and all(SENTENCE[overlay] in tests[check]["output"] for check in named), (values, named)
    assert sandboxed[overlay]["score"] == sum(t["score"] for t in sandboxed[overlay]["tests"])


@pytest.mark.timeout(120)
def test_a_crash_on_one_mask_and_block_size_is_caught_on_every_seed():
    """edge_blockwise_query_slices raises on a (B, 1, 1, T_k) mask when block_size divides T_q, and is right
    elsewhere: every input of the value checks meets every awkward block size, so it loses blockwise_matches_torch
    (and its gates) on every seed; paired with one drawn block size, that mask caught it on 6 seeds of 14. Two seeds
    here (65 s for four); bench/blockwise_mistakes.py tries it on 50."""
    for seed in range(2):
        found = graded("edge_blockwise_query_slices", seed)
        lost = {check for check, (points, _, _) in found.items() if points}
        assert lost == {"blockwise_matches_torch"} | GATES, (seed, lost)
        assert "RuntimeError" in found["blockwise_matches_torch"][2], seed


@pytest.mark.timeout(120)
@pytest.mark.parametrize("overlay", ["mistake_blockwise_reuses_wrong_scale", "mistake_blockwise_dtype_slip"])
def test_a_blockwise_attention_built_on_a_wrong_piece_loses_only_that_pieces_checks(overlay):
    """blockwise_attention calls the student's own attention_scores and scale_scores, and scale_scores is wrong
    (divides by d_k; or computes in float32, a dtype slip): the part's checks, run again with scale_scores answered by
    the reference, pass, so they keep their points and their gates (the memory check's measure is the student's code
    as it is) and say "fix scale_scores first"; only scale_scores' check is lost. Seen failing before the
    substitution: 16 and 32 points lost, every check of the part."""
    found = graded(overlay, 0, "blockwise or scale_values")
    lost = {check: points for check, (points, _, _) in found.items() if points}
    assert lost == {"scale_values": float(SETTINGS.points["scale_values"])}
    for check in VALUES:
        assert "fix scale_scores first" in found[check][2], check
