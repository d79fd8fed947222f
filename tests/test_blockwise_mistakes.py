"""The optional blockwise part's named mistakes (checks/mistakes.py ``blockwise_variants``), each a submission under
tests/submissions/overlays/: with the part on, each loses exactly its checks, on every seed tried, and its feedback
names it. The part's checks run in this process (tests/in_process.py), the memory check's measure included; each
submission is also graded once for real, through ``sdpa-grade batch`` and its sandbox (slow). The full-matrix version
and the attack on the measure are tests/test_memory_measure.py's."""

from __future__ import annotations

import json

import pytest

from autograder.checks.mistakes import SENTENCES
from autograder.config import load_settings
from autograder.grade import _pytest
from autograder.plugin import GradingPlugin
from autograder.render.text import output_text
from autograder.scoring import score
from tests.helpers import BIN, ROOT, run, with_overlay
from tests.in_process import InProcess

ON = ROOT / "tests" / "blockwise_on.toml"
SETTINGS = load_settings(ON, environ={})
VALUES = {"blockwise_matches_torch", "blockwise_causal", "blockwise_fully_masked", "blockwise_stability"}
GATES = {"blockwise_memory", "integrity_blockwise"}  # withheld while blockwise_matches_torch fails
# overlay -> (the checks it always loses, naming the mistake in each that compares values; the checks it may lose
# besides, where a seed's inputs show it: a causal draw whose queries never reach the last block, say), measured on
# 50 seeds (the slow test)
MISTAKES = {
    "mistake_blockwise_no_rescale_sum": (VALUES | {"blockwise_gradients"} | GATES, set()),
    "mistake_blockwise_no_rescale_output": (VALUES | {"blockwise_gradients"} | GATES, set()),
    "mistake_blockwise_block_normalised": (VALUES | {"blockwise_gradients"} | GATES, set()),
    "mistake_blockwise_last_block_dropped": (
        {"blockwise_matches_torch", "blockwise_fully_masked", "blockwise_gradients"} | GATES,
        {"blockwise_causal", "blockwise_stability"},
    ),
    "mistake_blockwise_max_from_zero": ({"blockwise_stability"}, set()),
    "mistake_blockwise_mask_after_exp": ({"blockwise_stability"}, set()),
    "mistake_blockwise_nan_rows": (
        {"blockwise_matches_torch", "blockwise_fully_masked"} | GATES,
        {"blockwise_stability", "blockwise_gradients"},
    ),
}
SENTENCE = {name: SENTENCES[name.removeprefix("mistake_")] for name in MISTAKES}


def graded(overlay: str | None, seed: int) -> dict:
    """check -> (points lost, the outcome's named mistake, the feedback), for the part's checks only."""
    namespace: dict = {}
    exec(compile(with_overlay(overlay), "attention.py", "exec"), namespace)  # noqa: S102 - the suite's own files
    runner = InProcess(namespace)
    plugin = GradingPlugin(lambda: runner, SETTINGS, seed, "cpu")
    _pytest(plugin, "-k", "blockwise", "--timeout", "120")
    return {
        item.outcome.check: (item.max_score - item.score, item.outcome.mistake, output_text(item))
        for item in score(list(plugin.outcomes.values()), SETTINGS)
    }


def test_the_reference_loses_nothing():
    assert {check: lost for check, (lost, _, _) in graded(None, 0).items() if lost} == {}


def _holds(overlay: str, seed: int) -> None:
    always, maybe = MISTAKES[overlay]
    found = graded(overlay, seed)
    lost = {check for check, (points, _, _) in found.items() if points}
    assert always <= lost <= always | maybe, (seed, lost)
    mistake = overlay.removeprefix("mistake_")
    values = lost - GATES - {"blockwise_gradients"}
    for check in values:  # a failed value check names this mistake or none (an input where it shows otherwise, such
        # as a T_k shorter than one block, where whole blocks only leave no block at all): never another
        _, named, feedback = found[check]
        assert named in (mistake, ""), (seed, check, named)
        assert (SENTENCE[overlay] in feedback) == (named == mistake), (seed, check)
    assert any(found[check][1] == mistake for check in values), (seed, "named nowhere")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("overlay", sorted(MISTAKES))
def test_a_blockwise_mistake_loses_its_checks_and_is_named(overlay):
    for seed in range(3):
        _holds(overlay, seed)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_every_blockwise_mistake_holds_on_fifty_seeds():
    """About 100 s on this machine: 7 submissions x 50 seeds, the part's checks in this process."""
    for overlay in sorted(MISTAKES):
        for seed in range(50):
            _holds(overlay, seed)


@pytest.fixture(scope="module")
def sandboxed(tmp_path_factory):
    """Each mistake's submission graded with the part on through the real command: file stem -> its results."""
    folder, out = tmp_path_factory.mktemp("class"), tmp_path_factory.mktemp("out")
    for overlay in MISTAKES:
        (folder / f"{overlay}.py").write_text(with_overlay(overlay))
    args = [str(BIN / "sdpa-grade"), "batch", str(folder), "--config", str(ON), "--jobs", "2", "--json-dir", str(out)]
    result = run(args, timeout=900)
    assert result.returncode == 0, result.stderr[-2000:]
    return {path.stem: json.loads(path.read_text()) for path in out.glob("*.json")}


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("overlay", sorted(MISTAKES))
def test_a_blockwise_mistake_graded_in_the_sandbox_loses_its_checks_and_is_named(sandboxed, overlay):
    """The real grading agrees with the in-process one: the same checks lost, the mistake named in the feedback."""
    always, maybe = MISTAKES[overlay]
    tests = {t["extra_data"]["check"]: t for t in sandboxed[overlay]["tests"]}
    lost = {check for check, t in tests.items() if t["score"] < t["max_score"]}
    assert always <= lost <= always | maybe, lost
    values = lost - GATES - {"blockwise_gradients"}
    named = {check for check in values if tests[check]["extra_data"].get("mistake") == overlay.removeprefix("mistake_")}
    assert named and all(SENTENCE[overlay] in tests[check]["output"] for check in named), (values, named)
    assert sandboxed[overlay]["score"] == sum(t["score"] for t in sandboxed[overlay]["tests"])


@pytest.mark.timeout(300)
def test_a_crash_on_one_mask_and_block_size_is_caught_on_every_seed():
    """edge_blockwise_query_slices raises on a (B, 1, 1, T_k) mask when block_size divides T_q, and is right
    elsewhere: every input of the value checks meets every awkward block size, so it loses blockwise_matches_torch
    (and its gates) on every seed; paired with one drawn block size, that mask caught it on 6 seeds of 14."""
    for seed in range(4):
        found = graded("edge_blockwise_query_slices", seed)
        lost = {check for check, (points, _, _) in found.items() if points}
        assert lost == {"blockwise_matches_torch"} | GATES, (seed, lost)
        assert "RuntimeError" in found["blockwise_matches_torch"][2], seed
