"""Points for outcomes: the only place that knows what a check is worth.

Integrity, timing and memory are gated: they award nothing to a function that fails its central value check
(agreement with PyTorch: ``not_yet_implemented``) for a mistake of its own, so an empty or broken submission
cannot collect them, while an edge case that the function's own checks charge costs those checks only. Such a
check is ``withheld`` (a field, worded at the edge as not awarded yet), passed or failed alike: it is no verdict
on the student.

A failure that builds on another function's mistake (``Outcome.builds_on``: the check, run again with those of the
student's functions answered by the reference, passes: checks/substitution.py) is, under
``[scoring] borrowed = "carry_forward"``, carried forward: the check keeps its points when each function it
builds on fails a check of its own here, so the mistake costs its points once, where it is made. Such a
failure does not count against its function's gates either. Under "deduct" it costs its points as any failure.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from autograder.checks.flags import REVIEW_ONLY
from autograder.checks.mistakes import NEEDS
from autograder.config import Settings
from autograder.plugin import Outcome
from autograder.status import Category, Status

GATED = {Category.INTEGRITY, Category.TIMING, Category.MEMORY}
# each gated function's central value check: failing it (for a mistake of its own) is what makes it not yet an
# implementation (tests/grading/test_scoring.py: every function with a gate has one, and it is a check of that function)
CENTRAL = {
    "scaled_dot_product_attention": "sdpa_matches_torch",
    "MultiHeadAttention": "mha_matches_torch",
    "blockwise_attention": "blockwise_matches_torch",
    "grouped_query_attention": "gqa_matches_torch",
}
# a wrong answer in a timed call shows a trick only where the function is otherwise right; a broken
# function's timed answers are wrong for the reason its own checks already give: no flag, no accusation
FLAGS_ON_CORRECT_FUNCTIONS_ONLY = {"timed_answer_wrong"}
# and the flags a passed check carries for review (checks/flags.REVIEW_ONLY): withheld like a plain pass


@dataclass
class Scored:
    """A check's points, and its feedback as fields: ``feedback`` is what was found (``Status.PASSED`` where it
    passed with nothing to say: render/text.says_passed); the outcome's cause and flag, and ``borrowed`` (the
    check whose cause this failure borrows, and that cause), are worded at the edge (autograder/render/text.py)."""

    outcome: Outcome
    score: float
    max_score: float
    feedback: str
    borrowed: tuple[str, str] | None = None
    withheld: bool = False  # gated: not awarded until the function passes its own correctness checks
    carried: tuple[str, ...] = ()  # kept its points: correct once these functions (each losing points here) are fixed


def carried_forward(outcomes: list[Outcome], settings: Settings) -> dict[str, tuple[str, ...]]:
    """check -> the functions it builds on, for each failed check that keeps its points (none under "deduct").

    A failure is carried forward only with its evidence (``builds_on``: the check passed once those functions were
    answered by the reference; a timing check's timed answers compared on that run) and only when every function it
    builds on fails a correctness check of its own in this grading: a mistake its own checks miss is never free.
    The functions built on come before (the pieces before the attention, the attention before the module), so
    every chain of carried failures ends at a check that loses its points.
    """
    if settings.scoring.borrowed != "carry_forward":
        return {}
    failing = {o.function for o in outcomes if o.category not in GATED and o.status == Status.FAILED}
    return {
        o.check: o.builds_on
        for o in outcomes
        if o.status == Status.FAILED
        and o.category != Category.INTEGRITY  # never run again: what the source and the ops show is its own
        and o.builds_on
        and o.function not in o.builds_on
        and set(o.builds_on) <= failing
    }


def not_yet_implemented(outcomes: list[Outcome], carried: dict[str, tuple[str, ...]]) -> set[str]:
    """The functions whose gates (integrity, timing) are withheld: those failing their central value check
    (``CENTRAL``: agreement with PyTorch) for a mistake of their own, on its main inputs (not only on an edge shape:
    ``Outcome.edge``). A stub, a wrong formula, code that does not load: not yet an implementation to time or to
    vouch for. An edge case its own checks charge (fully masked rows, a causal corner, a dtype, a batch of one)
    leaves the gates to measure what they measure."""
    return {
        o.function
        for o in outcomes
        if CENTRAL.get(o.function) == o.check and o.status != Status.PASSED and o.check not in carried and not o.edge
    }


def score(outcomes: list[Outcome], settings: Settings) -> list[Scored]:
    carried = carried_forward(outcomes, settings)
    broken = not_yet_implemented(outcomes, carried)
    # a function whose own checks fail only for what they carry forward: its timed answers are wrong for that reason
    own_failures = {
        o.function for o in outcomes if o.category not in GATED and o.status != Status.PASSED and o.check not in carried
    }
    explained = {o.function for o in outcomes if o.check in carried} - own_failures
    when_no_gpu = settings.timing.when_no_gpu
    scored = []
    for outcome in outcomes:
        worth = float(settings.points[outcome.check])
        if outcome.check in carried:
            if outcome.flag in FLAGS_ON_CORRECT_FUNCTIONS_ONLY:  # its wrong timed answers are the carried mistake's
                outcome = replace(outcome, flag="")
            scored.append(Scored(outcome, worth, worth, outcome.message, carried=carried[outcome.check]))
        elif outcome.function in own_failures | explained and (
            _untimed(outcome) or outcome.flag in FLAGS_ON_CORRECT_FUNCTIONS_ONLY
        ):  # a timed call failed (raised, hung) or answered wrong, for a function whose own checks already say what
            # is wrong with it: no verdict on its time and no accusation; timed once they pass
            scored.append(Scored(replace(outcome, flag="", message=""), 0.0, worth, "", withheld=True))
        elif (
            outcome.function in broken
            and outcome.category in GATED
            and outcome.status in (Status.PASSED, Status.FAILED)
            and (not outcome.flag or outcome.flag in FLAGS_ON_CORRECT_FUNCTIONS_ONLY | REVIEW_ONLY)
        ):  # no verdict on what is not yet an implementation: no points yet, and no accusation (a flag for what the
            # source or the ops show, fused attention, tampering, stays a failure)
            scored.append(Scored(replace(outcome, flag="", message=""), 0.0, worth, "", withheld=True))
        elif outcome.status == Status.PASSED:  # with what it found for review, where it found something
            scored.append(Scored(outcome, worth, worth, outcome.message or Status.PASSED))
        elif outcome.status == Status.NOT_RUN and outcome.category == Category.TIMING:
            earned = {"exclude": 0.0, "award": worth, "fail": 0.0}[when_no_gpu]
            ceiling = 0.0 if when_no_gpu == "exclude" else worth
            if outcome.function in broken:
                earned = 0.0
            scored.append(Scored(outcome, earned, ceiling, f"not run: {outcome.message}"))
        elif outcome.status == Status.GRADER_ERROR:
            scored.append(Scored(outcome, 0.0, worth, ""))  # worded at the edge: render/text.py
        else:
            scored.append(Scored(outcome, 0.0, worth, outcome.message))
    return _point_to_causes(scored)


def _untimed(outcome: Outcome) -> bool:
    """A timing check that failed with no verdict on time: neither too slow (a named mistake) nor a wrong answer
    (a flag), so one of its timed calls failed."""
    return (
        outcome.category == Category.TIMING
        and outcome.status == Status.FAILED
        and not outcome.mistake
        and not outcome.flag
    )


def _point_to_causes(scored: list[Scored]) -> list[Scored]:
    """A failure without a cause borrows the mistake named by another check of the same function, only with evidence.

    Evidence: the failure is a difference in values (not an exception, not a shape), and its inputs
    exercise what the mistake needs (a mask for a masking mistake, is_causal for a causal one...): what
    a check exercises is declared at the check (its marker's ``exercises``), what a mistake needs in
    ``checks/mistakes.NEEDS``.
    Otherwise no cause is claimed: the failure's own message says where the result differs. That a
    function "builds on" a broken one is claimed by the checks themselves, only after recomputing
    from the student's own pieces (autograder/checks/check_3_sdpa.py, check_4_mha_variance.py).
    """
    named: dict[str, Scored] = {}
    for item in scored:
        if item.outcome.mistake:
            named.setdefault(item.outcome.function, item)
    for item in scored:
        if item.score or item.withheld or item.outcome.status != Status.FAILED:
            continue
        if item.outcome.mistake or item.outcome.cause:
            continue
        source = named.get(item.outcome.function)
        if source is None or not item.outcome.evidence:
            continue
        need = NEEDS.get(source.outcome.mistake)
        if need is None or need in item.outcome.exercises:
            item.borrowed = (source.outcome.check, source.outcome.cause)
    return scored
