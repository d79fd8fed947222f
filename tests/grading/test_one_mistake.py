"""A mistake costs its points once, where it is made. That each classic one-function mistake loses its own function's
checks and nothing else (gates included) is asserted by tests/grading/test_grading_in_process.py, on the outcomes it
computes for every case; here, the rules beside it. The value checks run in this process (tests/one_mistake.py);
bench/one_mistake.py measures the same on 50 seeds, the slow batch grades them for real."""

from __future__ import annotations

import pytest

from autograder.scoring import score
from autograder.status import Status
from tests.helpers import words_of
from tests.one_mistake import SETTINGS, graded, lost, outcomes, own_checks, timed

SEED = 3


@pytest.mark.timeout(120)
def test_a_helper_that_always_raises_does_not_carry_a_stub_attention():
    """An attention that only hands over to a helper that raises gets nothing for it: carried forward, a failure must
    be right once the helper is (the worker runs it again with the helper standing in with the right result). Seen
    failing (the attention kept its points) with the recomposition raising in the helper as the only evidence."""
    points = lost("attack_carry_stub", SEED)
    assert own_checks("scaled_dot_product_attention") - {"timing_gpu"} <= set(points)  # timing_gpu: 0 of 0 here


@pytest.mark.timeout(120)
def test_a_cause_is_named_only_where_it_holds_on_every_shape_tried():
    """attention_scores broken on 2-D inputs only is not told it transposed axes 1 and 2 (that breaks with a head
    axis too, which this code gets right); the transpose itself still is."""
    only_2d = {o.check: o for o in outcomes("edge_scores_2d_breaks", SEED)}["scores_shape"]
    assert (only_2d.status, only_2d.mistake) == (Status.FAILED, "")
    assert "it worked on (B, T, d_k)" in only_2d.message
    transposed = {o.check: o for o in outcomes("mistake_transpose_12", SEED)}["scores_shape"]
    assert transposed.mistake == "transpose_12"


@pytest.mark.timeout(120)
def test_the_same_file_gets_the_same_words_on_every_seed():
    """Divide by d_k (once seen with no "Likely cause" at all, 1 grading of 29): on several seeds every check's
    feedback, its named cause and its hint included, reads the same, numbers aside."""
    words = [
        {check: words_of(text) for check, (_, _, text) in graded("mistake_divide_by_dk", seed).items()}
        for seed in (0, 1, 2, 5)
    ]
    assert all(found == words[0] for found in words[1:]), [
        (check, [found[check] for found in words])
        for check in words[0]
        if any(f[check] != words[0][check] for f in words)
    ]
    assert "Likely cause: " in words[0]["scale_values"]


@pytest.mark.timeout(120)
def test_two_independent_mistakes_cost_both():
    """A softmax over the wrong axis, and an attention that overflows in float16 on its own (it pre-multiplies Q and K
    by 256): each check is decided on its own substituted run, so the attention's float16 check, which fails with the
    reference's masked_softmax too, costs its points beside the softmax's own checks (seen failing with the
    substituted run's verdict ignored: sdpa_dtypes kept its points)."""
    alone = lost("mistake_query_axis", SEED)
    both = lost("mistake_query_axis_and_overflow", SEED)
    assert both == alone | {"sdpa_dtypes": float(SETTINGS.points["sdpa_dtypes"])}
    assert set(alone) == own_checks("masked_softmax") & set(alone)


@pytest.mark.timeout(120)
def test_a_carried_timing_check_is_timed_on_answers_compared_with_the_references():
    """Divide by d_k: timing_cpu's timed answers are wrong for scale_scores' mistake. Run again with scale_scores
    answered by the reference, the answers it is judged on are right: the check keeps its points, carried to
    scale_scores, and its feedback names it ("fix scale_scores first"); the time is the student's code as it is."""
    found = {o.check: o for o in timed("mistake_divide_by_dk", SEED)}
    timing = found["timing_cpu"]
    assert (timing.flag, timing.builds_on) == ("timed_answer_wrong", ("scale_scores",))
    assert "fix scale_scores first" in timing.cause
    scored = {item.outcome.check: item for item in score(list(found.values()), SETTINGS)}
    assert scored["timing_cpu"].score == scored["timing_cpu"].max_score == float(SETTINGS.points["timing_cpu"])
    assert scored["timing_cpu"].carried == ("scale_scores",)
