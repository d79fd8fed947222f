"""The optional blockwise part's named mistakes, graded in this process: the cases and what each must lose.

The part's checks run here (tests/in_process.py), the memory check's measure included. Used by
tests/checks/test_blockwise_mistakes.py (a few seeds) and bench/blockwise_mistakes.py (many seeds, the table in
docs/grading.md).
"""

from __future__ import annotations

from autograder.checks.mistakes import SENTENCES
from autograder.config import load_settings
from autograder.grade import _pytest
from autograder.plugin import GradingPlugin
from autograder.render.text import output_text
from autograder.scoring import score
from autograder.status import Status
from tests.helpers import ROOT, with_overlay
from tests.in_process import InProcess

ON = ROOT / "tests" / "blockwise_on.toml"
SETTINGS = load_settings(ON, environ={})
VALUES = {"blockwise_matches_torch", "blockwise_causal", "blockwise_fully_masked", "blockwise_stability"}
GATES = {"blockwise_memory", "integrity_blockwise"}  # withheld while blockwise_matches_torch fails
# overlay -> (the checks it always loses, naming the mistake in each that compares values; the checks it may lose
# besides, where a seed's inputs show it: a causal draw whose queries never reach the last block, say), measured on
# 50 seeds (bench/blockwise_mistakes.py)
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


def graded(overlay: str | None, seed: int, selected: str = "blockwise") -> dict:
    """check -> (points lost, the outcome's named mistake, the feedback), for the part's checks only (``selected``:
    the checks run, as pytest's -k)."""
    namespace: dict = {}
    exec(compile(with_overlay(overlay), "attention.py", "exec"), namespace)  # noqa: S102 - the suite's own files
    runner = InProcess(namespace)
    plugin = GradingPlugin(lambda: runner, SETTINGS, seed, "cpu")
    _pytest(plugin, "-k", selected, "--timeout", "120")
    return {
        item.outcome.check: (item.max_score - item.score, item.outcome.mistake, _said(item))
        for item in score(list(plugin.outcomes.values()), SETTINGS)
    }


def _said(item) -> str:
    """A check's feedback, and for the grader's error what it said (the instructor's log: a machine too busy, say)."""
    text = output_text(item)
    return f"{text} [{item.outcome.message}]" if item.outcome.status is Status.GRADER_ERROR else text


def holds(overlay: str, seed: int, found: dict | None = None) -> None:
    """``overlay`` at ``seed`` loses its checks (those it always loses, and no more than those it may) and names its
    mistake in a failed value check, never another (``found``: its grading at ``seed``, where made already)."""
    always, maybe = MISTAKES[overlay]
    found = graded(overlay, seed) if found is None else found
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
