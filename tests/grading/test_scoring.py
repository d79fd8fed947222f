"""autograder/scoring.py: points from outcomes (when_no_gpu, the gates) and causes borrowed only with evidence."""

from __future__ import annotations

from dataclasses import replace

import pytest

from autograder.checks.mistakes import SENTENCES
from autograder.config import load_settings
from autograder.plugin import Outcome
from autograder.render.text import GRADER_FAILED_NEXT, WITHHELD, output_text
from autograder.scoring import score
from autograder.status import Status

SDPA = "scaled_dot_product_attention"
EVIDENCE = {"shape": [2, 2], "index": [0, 1], "expected": 0.5, "got": 0.0, "error": 0.5, "allowed": 1e-5}
BROKEN = WITHHELD.format(function=SDPA)


def settings(tmp_path, when_no_gpu: str = "exclude"):
    config = tmp_path / "settings.toml"
    config.write_text(f'[timing]\nwhen_no_gpu = "{when_no_gpu}"\n')
    return load_settings(config)


def outcome(check: str, status: Status = Status.PASSED, function: str = SDPA, category: str = "values", **fields):
    return Outcome(check, function, category, status, **fields)


def by_check(scored) -> dict:
    return {item.outcome.check: item for item in scored}


@pytest.mark.parametrize(
    ("when_no_gpu", "points"), [("exclude", (0.0, 0.0)), ("award", (2.0, 2.0)), ("fail", (0.0, 2.0))]
)
def test_timing_without_a_gpu_scores_as_the_settings_say(tmp_path, when_no_gpu, points):
    """The GPU check not run: 0 of 0 (exclude), full points (award), or 0 of its worth (fail)."""
    skipped = outcome("timing_gpu", Status.NOT_RUN, category="timing", message="the grading machine has no CUDA device")
    correct = outcome("sdpa_matches_torch", category="matches-torch")
    [item] = score([correct, skipped], settings(tmp_path, when_no_gpu))[1:]
    assert (item.score, item.max_score) == points
    assert item.feedback == "not run: the grading machine has no CUDA device"


def test_an_awarded_gpu_check_is_not_awarded_to_a_broken_function(tmp_path):
    """award gives nothing to a function that fails a correctness check, out of the same maximum."""
    skipped = outcome("timing_gpu", Status.NOT_RUN, category="timing", message="no CUDA")
    broken = outcome("sdpa_matches_torch", Status.FAILED, category="matches-torch", message="wrong.")
    item = by_check(score([broken, skipped], settings(tmp_path, "award")))["timing_gpu"]
    assert (item.score, item.max_score) == (0.0, 2.0)


def test_integrity_and_timing_are_gated_on_correctness(tmp_path):
    """A passed integrity or timing check earns nothing while its function fails a correctness check; other
    functions' checks and the function's own correctness checks are scored as they are."""
    outcomes = [
        outcome("sdpa_matches_torch", Status.FAILED, category="matches-torch", message="wrong."),
        outcome("sdpa_causal", category="causal"),
        outcome("integrity_sdpa", category="integrity"),
        outcome("timing_cpu", category="timing"),
        outcome("integrity_mha", function="MultiHeadAttention", category="integrity"),
    ]
    scored = by_check(score(outcomes, settings(tmp_path)))
    gated = [(scored[c].score, scored[c].withheld, output_text(scored[c])) for c in ("integrity_sdpa", "timing_cpu")]
    assert gated == [(0.0, True, BROKEN), (0.0, True, BROKEN)]
    assert (scored["sdpa_causal"].score, scored["sdpa_causal"].feedback) == (3.0, "passed")
    assert (scored["integrity_mha"].score, scored["integrity_mha"].max_score) == (1.0, 1.0)
    assert (scored["sdpa_matches_torch"].score, scored["sdpa_matches_torch"].feedback) == (0.0, "wrong.")


def test_a_grader_error_costs_the_student_nothing_but_says_so(tmp_path):
    """The grader's own failure: 0 of the check's worth, and the student is told it was not their code."""
    [item] = score(
        [outcome("sdpa_causal", Status.GRADER_ERROR, category="causal", message="Traceback ...")], settings(tmp_path)
    )
    assert (item.score, item.max_score) == (0.0, 3.0)
    assert output_text(item) == f"the grader itself failed on this check, not your code. {GRADER_FAILED_NEXT}"
    assert "Traceback" not in output_text(item)


def test_a_wrong_timed_answer_is_flagged_only_on_a_correct_function(tmp_path):
    """timed_answer_wrong flags a function that is otherwise right; on a broken one the flag is dropped."""
    timed = outcome(
        "timing_cpu", Status.FAILED, category="timing", message="a wrong answer.", flag="timed_answer_wrong"
    )
    alone = by_check(score([timed], settings(tmp_path)))["timing_cpu"]
    assert alone.outcome.flag == "timed_answer_wrong"
    assert output_text(alone) == "a wrong answer. Flagged for the instructor's review."
    broken = outcome("sdpa_matches_torch", Status.FAILED, category="matches-torch", message="wrong.")
    item = by_check(score([broken, timed], settings(tmp_path)))["timing_cpu"]
    assert (item.outcome.flag, item.withheld, output_text(item)) == ("", True, BROKEN)


def named(check: str = "sdpa_matches_torch", mistake: str = "mask_inverted") -> Outcome:
    return outcome(
        check,
        Status.FAILED,
        category="matches-torch",
        message="the output differs.",
        mistake=mistake,
        cause=SENTENCES[mistake],
        evidence=EVIDENCE,
        exercises=("mask",),
    )


def differs(check: str = "sdpa_dtypes", exercises=("mask",), **fields) -> Outcome:
    return outcome(
        check,
        Status.FAILED,
        category="dtype",
        message="the output in float32 differs.",
        exercises=exercises,
        **{"evidence": EVIDENCE, **fields},
    )


def test_a_cause_is_borrowed_where_the_inputs_can_show_it(tmp_path):
    """A failure in values, on inputs that exercise what the named mistake needs, borrows that mistake's cause."""
    item = by_check(score([named(), differs()], settings(tmp_path)))["sdpa_dtypes"]
    assert item.borrowed == ("sdpa_matches_torch", SENTENCES["mask_inverted"])
    assert output_text(item) == (
        "the output in float32 differs. Probably the same cause as in sdpa_matches_torch: "
        f"{SENTENCES['mask_inverted']}."
    )


@pytest.mark.parametrize(
    ("failure", "why"),
    [
        (differs(exercises=()), "its inputs have no mask, which an inverted mask needs"),
        (differs(evidence=None), "no evidence: an exception or a shape, not a difference in values"),
        (differs(cause="precision loss"), "it has a cause of its own"),
        (differs(function="masked_softmax"), "another function's mistake"),
    ],
)
def test_no_cause_is_borrowed_without_evidence(tmp_path, failure, why):
    """A cause is not borrowed across functions, without evidence, onto inputs that cannot show it, or over
    a cause of the failure's own."""
    item = by_check(score([named(), failure], settings(tmp_path)))["sdpa_dtypes"]
    assert item.borrowed is None, why
    assert "Probably the same cause" not in output_text(item)


def test_a_mistake_that_shows_on_any_input_is_borrowed_on_any(tmp_path):
    """divide_by_dk needs no particular input: a failure in values borrows it whatever its inputs exercise."""
    item = by_check(score([named(mistake="divide_by_dk"), differs(exercises=())], settings(tmp_path)))["sdpa_dtypes"]
    assert item.borrowed == ("sdpa_matches_torch", SENTENCES["divide_by_dk"])


def test_own_cause_is_worded_at_the_edge(tmp_path):
    """A named mistake's feedback: the message, then 'Likely cause: ' and the mistake's sentence, one line."""
    [item] = score([named()], settings(tmp_path))
    assert item.feedback == "the output differs."
    assert output_text(item) == f"the output differs. Likely cause: {SENTENCES['mask_inverted']}."


def policy(tmp_path, borrowed: str):
    config = tmp_path / f"{borrowed}.toml"
    config.write_text(f'[scoring]\nborrowed = "{borrowed}"\n')
    return load_settings(config)


def built_on_scale(**fields) -> list[Outcome]:
    """scale_scores wrong in its own check, and the attention's checks failing only through it (with evidence)."""
    return [
        outcome("scale_values", Status.FAILED, function="scale_scores", message="scale wrong.", mistake="divide_by_dk"),
        outcome(
            "sdpa_matches_torch",
            Status.FAILED,
            category="matches-torch",
            message="the output differs.",
            evidence=EVIDENCE,
            builds_on=("scale_scores",),
            **fields,
        ),
        outcome("integrity_sdpa", category="integrity"),
        outcome(
            "timing_cpu",
            Status.FAILED,
            category="timing",
            message="a wrong answer.",
            flag="timed_answer_wrong",
            builds_on=("scale_scores",),  # its timed answers, with scale_scores answered by the reference, were right
        ),
        outcome(
            "mha_matches_torch",
            Status.FAILED,
            function="MultiHeadAttention",
            category="multi-head",
            message="the module differs.",
            builds_on=(SDPA,),
        ),
        outcome("integrity_mha", function="MultiHeadAttention", category="integrity"),
    ]


@pytest.mark.timeout(10)
def test_a_failure_carried_forward_keeps_its_points_and_opens_its_gates(tmp_path):
    """carry_forward: a check failing only through a broken function it builds on keeps its points, says it is
    correct once that function is fixed, and its function's gates are judged on their own (timing included)."""
    points = policy(tmp_path, "carry_forward").points
    scored = by_check(score(built_on_scale(), policy(tmp_path, "carry_forward")))
    earned = {check: item.score for check, item in scored.items()}
    assert earned == {check: float(points[check]) for check in scored} | {"scale_values": 0.0}
    kept = scored["sdpa_matches_torch"]
    assert kept.carried == ("scale_scores",)
    assert "Correct once scale_scores is fixed: this check keeps its points" in output_text(kept)
    assert "Correct once scaled_dot_product_attention is fixed" in output_text(scored["mha_matches_torch"])
    assert scored["timing_cpu"].carried == ("scale_scores",)  # its answers were right once scale_scores was
    assert scored["timing_cpu"].outcome.flag == ""  # its wrong answers are the carried mistake's: no one is accused


@pytest.mark.timeout(10)
def test_a_timing_check_whose_answers_were_not_compared_is_not_carried(tmp_path):
    """A timing check with wrong timed answers keeps its points only where its substituted run's answers were right
    (``builds_on``); without that evidence it is withheld, with no accusation, whatever its function's other checks
    carry. Seen failing (kept 2 of 2 points) while scoring passed any such check of a function whose failures were all
    carried."""
    outcomes = [o if o.check != "timing_cpu" else replace(o, builds_on=()) for o in built_on_scale()]
    scored = by_check(score(outcomes, policy(tmp_path, "carry_forward")))
    assert (scored["timing_cpu"].score, scored["timing_cpu"].withheld, scored["timing_cpu"].outcome.flag) == (
        0.0,
        True,
        "",
    )


@pytest.mark.timeout(10)
def test_deduct_keeps_the_deduction_of_before(tmp_path):
    """deduct: the same outcomes score as they did before the policy existed, and say nothing of it."""
    scored = by_check(score(built_on_scale(), policy(tmp_path, "deduct")))
    assert {check for check, item in scored.items() if item.score == 0} == set(scored)
    assert [output_text(scored[check]) for check in ("integrity_sdpa", "timing_cpu")] == [BROKEN, BROKEN]
    assert not any(item.carried for item in scored.values())
    assert "Correct once" not in output_text(scored["sdpa_matches_torch"])


@pytest.mark.timeout(10)
def test_a_failure_is_carried_only_onto_a_function_that_loses_points(tmp_path):
    """A mistake its own function's checks miss is never free: built on a function that passes, the check fails."""
    outcomes = built_on_scale()
    outcomes[0] = outcome("scale_values", function="scale_scores")
    scored = by_check(score(outcomes, policy(tmp_path, "carry_forward")))
    assert scored["sdpa_matches_torch"].score == 0
    assert scored["sdpa_matches_torch"].carried == ()
    assert (scored["integrity_sdpa"].score, output_text(scored["integrity_sdpa"])) == (0.0, BROKEN)
    assert scored["mha_matches_torch"].score > 0  # its attention fails sdpa_matches_torch: carried onto that


@pytest.mark.timeout(10)
def test_an_edge_case_of_its_own_costs_its_check_and_leaves_the_gates_open(tmp_path):
    """One failure of its own outside the central check (no builds_on: fully masked rows, a causal corner) costs
    that check's points, and no more: integrity and timing measure what they measure."""
    outcomes = built_on_scale() + [outcome("sdpa_causal", Status.FAILED, category="causal", message="own.")]
    # its own mistake shows in its timed answers with scale_scores answered too: the substituted run did not pass
    outcomes = [o if o.check != "timing_cpu" else replace(o, builds_on=()) for o in outcomes]
    scored = by_check(score(outcomes, policy(tmp_path, "carry_forward")))
    assert scored["sdpa_causal"].score == 0
    assert scored["sdpa_matches_torch"].score > 0
    assert scored["integrity_sdpa"].score == 2.0
    # its timed answers are wrong for what its own checks say: no verdict on its time, and no accusation
    assert (scored["timing_cpu"].withheld, scored["timing_cpu"].outcome.flag) == (True, "")


@pytest.mark.timeout(10)
def test_the_central_check_failed_for_a_mistake_of_its_own_closes_the_gates(tmp_path):
    """Failing the central check (agreement with PyTorch) on its main inputs withholds the gates, passed or failed
    (never shown failed); on an edge shape only (``edge``), it costs that check alone."""
    own = outcome("sdpa_matches_torch", Status.FAILED, category="matches-torch", message="own.")
    timing = outcome("timing_cpu", Status.FAILED, category="timing", message="scaled_dot_product_attention failed")
    gates = [outcome("integrity_sdpa", category="integrity"), timing]
    scored = by_check(score([own, *gates], settings(tmp_path)))
    assert [
        (scored[c].score, scored[c].withheld, output_text(scored[c])) for c in ("integrity_sdpa", "timing_cpu")
    ] == [
        (0.0, True, BROKEN),
        (0.0, True, BROKEN),
    ]
    edge = outcome("sdpa_matches_torch", Status.FAILED, category="matches-torch", message="own.", edge=True)
    scored = by_check(
        score(
            [edge, outcome("integrity_sdpa", category="integrity"), outcome("timing_cpu", category="timing")],
            settings(tmp_path),
        )
    )
    assert [(scored[c].score, scored[c].withheld) for c in ("integrity_sdpa", "timing_cpu")] == [
        (2.0, False),
        (2.0, False),
    ]


@pytest.mark.timeout(10)
def test_a_timed_call_that_fails_is_no_verdict_on_a_function_whose_checks_say_why(tmp_path):
    """A timing check with no verdict on time (a timed call raised: no mistake, no flag) is withheld while the
    function fails a check of its own; on a function that passes all its checks it is the student's failure."""
    timing = outcome("timing_cpu", Status.FAILED, category="timing", message="scaled_dot_product_attention failed")
    edge = outcome("sdpa_causal", Status.FAILED, category="causal", message="own.")
    central = outcome("sdpa_matches_torch", category="matches-torch")
    scored = by_check(score([central, edge, timing], settings(tmp_path)))
    assert (scored["timing_cpu"].score, scored["timing_cpu"].withheld) == (0.0, True)
    scored = by_check(score([central, timing], settings(tmp_path)))
    assert (scored["timing_cpu"].score, scored["timing_cpu"].withheld) == (0.0, False)
    slow = outcome("timing_cpu", Status.FAILED, category="timing", message="took 40 times", mistake="python_loop")
    scored = by_check(score([central, edge, slow], settings(tmp_path)))
    assert (scored["timing_cpu"].score, scored["timing_cpu"].withheld) == (0.0, False)


def test_every_gated_function_has_a_central_check_of_its_own():
    """scoring.CENTRAL names, for each function with an integrity or timing check, one of that function's checks."""
    from autograder.assignment.catalogue import catalogue
    from autograder.scoring import CENTRAL, GATED

    entries = catalogue()
    gated = {entry.function for entry in entries if entry.category in GATED}
    assert set(CENTRAL) == gated
    assert all(
        any(e.check == CENTRAL[f] and e.function == f and e.category not in GATED for e in entries) for f in gated
    )
