"""Each one-function mistake, graded in this process: the checks it loses, and its own function's.

The value checks run here through the checks' proxy (tests/in_process.py, no sandbox); integrity and timing are
taken as passed, so what is measured is the scoring of them (withheld or not), not their measures: the slow batch
(tests/grading/test_grading.py) grades them for real. Used by tests/grading/test_one_mistake.py (a seed),
tests/grading/test_grading_in_process.py (every grading case it can judge) and bench/one_mistake.py (many seeds, the
table in docs/grading.md).
"""

from __future__ import annotations

from autograder.assignment.catalogue import catalogue
from autograder.config import load_settings
from autograder.grade import _pytest
from autograder.plugin import GradingPlugin, Outcome
from autograder.render.text import output_text
from autograder.scoring import GATED, score
from autograder.status import Category, Status
from tests.helpers import with_overlay
from tests.in_process import InProcess

# overlay -> the one student function it gets wrong: the classic mistakes (SPEC section 6 and the lesson)
ONE_FUNCTION = {
    "mistake_no_scale": "scale_scores",
    "mistake_divide_by_dk": "scale_scores",
    "mistake_transpose_12": "attention_scores",
    "mistake_query_axis": "masked_softmax",
    "mistake_mask_inverted": "masked_softmax",
    "mistake_zero_fill": "masked_softmax",
    "mistake_mask_after_softmax": "masked_softmax",
    "mistake_nan_rows": "masked_softmax",
    "mistake_uniform_rows": "masked_softmax",
    "mistake_additive_mask_1e9": "masked_softmax",
    "mistake_no_max_subtraction": "masked_softmax",
    "mistake_mutation": "masked_softmax",
    "mistake_causal_flipped": "causal_mask",
    "mistake_causal_bottom_right": "causal_mask",
    "mistake_padding_at_least_one_key": "padding_mask",
    "mistake_variance_scaled": "dot_product_variance",
    "mistake_mha_split_no_transpose": "MultiHeadAttention",
    "mistake_causal_ignored": "scaled_dot_product_attention",
    "edge_squeeze_batch": "scaled_dot_product_attention",
}
SETTINGS = load_settings()
# the gates the default settings grade (an optional part's, turned off, are not run)
GATES = [
    entry
    for entry in catalogue()
    if entry.category in GATED and entry.check in SETTINGS.points and entry.check != "timing_gpu"
]


def own_checks(function: str) -> set[str]:
    """Every check of ``function``, its gates included."""
    return {entry.check for entry in catalogue() if entry.function == function}


def outcomes(overlay: str | None, seed: int) -> list[Outcome]:
    """The value checks' outcomes for the reference with ``overlay`` appended, and its gates as passed."""
    source = with_overlay(overlay)
    namespace: dict = {}
    exec(compile(source, "attention.py", "exec"), namespace)  # noqa: S102 - the suite's own submissions
    runner = InProcess(namespace)
    plugin = GradingPlugin(lambda: runner, SETTINGS, seed, "cpu")
    _pytest(plugin, "-k", "not integrity and not timing", "--timeout", "120")
    gates = [Outcome(entry.check, entry.function, Category(entry.category), Status.PASSED) for entry in GATES]
    return list(plugin.outcomes.values()) + gates


def timed(overlay: str | None, seed: int) -> list[Outcome]:
    """The outcomes of ``overlay``'s scale check and its attention's CPU timing check, the reference timed beside it in
    this process (tests/in_process.py): a carried timing check's substituted run, as a grading runs it."""
    namespace: dict = {}
    exec(compile(with_overlay(overlay), "attention.py", "exec"), namespace)  # noqa: S102 - the suite's own submissions
    reference: dict = {}
    exec(compile(with_overlay(None), "attention.py", "exec"), reference)  # noqa: S102 - the reference itself
    runner = InProcess(namespace)
    plugin = GradingPlugin(lambda: runner, SETTINGS, seed, "cpu", connect_reference=lambda: InProcess(reference))
    _pytest(plugin, "-k", "scale_values or timing_cpu", "--timeout", "120")
    return list(plugin.outcomes.values())


def graded(overlay: str | None, seed: int) -> dict[str, tuple[float, float, str]]:
    """check -> (score, max_score, results.json's output), for the reference with ``overlay``, at ``seed``."""
    return scored(outcomes(overlay, seed))


def scored(found: list[Outcome], settings=SETTINGS) -> dict[str, tuple[float, float, str]]:
    """check -> (score, max_score, results.json's output) of the outcomes ``found``, scored under ``settings``."""
    return {item.outcome.check: (item.score, item.max_score, output_text(item)) for item in score(found, settings)}


def lost(overlay: str | None, seed: int) -> dict[str, float]:
    """check -> points lost, for the reference with ``overlay``, at ``seed``."""
    return {
        item.outcome.check: item.max_score - item.score
        for item in score(outcomes(overlay, seed), SETTINGS)
        if item.score < item.max_score
    }
