"""Points for outcomes: the only place that knows what a check is worth.

Integrity and timing are gated: they award nothing to a function that fails any of its
correctness checks, so an empty or broken submission cannot collect them.
"""

from __future__ import annotations

from dataclasses import dataclass

from autograder.config import Settings
from autograder.plugin import Outcome

GATED = {"integrity", "timing"}
# which student functions each one calls, as the handout builds them
BUILDS_ON = {
    "scaled_dot_product_attention": ("attention_scores", "scale_scores", "causal_mask", "masked_softmax", "attention_output"),
    "MultiHeadAttention": ("scaled_dot_product_attention",),
}
CAUSE = "Likely cause: "


@dataclass
class Scored:
    outcome: Outcome
    score: float
    max_score: float
    feedback: str


def score(outcomes: list[Outcome], settings: Settings) -> list[Scored]:
    broken = {o.function for o in outcomes if o.category not in GATED and o.status != "passed"}
    when_no_gpu = settings["timing"]["when_no_gpu"]
    scored = []
    for outcome in outcomes:
        worth = float(settings.points[outcome.check])
        if outcome.status == "passed" and outcome.category in GATED and outcome.function in broken:
            reason = f"no points: {outcome.function} fails some of its correctness checks; fix those first"
            scored.append(Scored(outcome, 0.0, worth, reason))
        elif outcome.status == "passed":
            scored.append(Scored(outcome, worth, worth, "passed"))
        elif outcome.status == "not-run" and outcome.category == "timing":
            earned = {"exclude": 0.0, "award": worth, "fail": 0.0}[when_no_gpu]
            ceiling = 0.0 if when_no_gpu == "exclude" else worth
            if outcome.function in broken:
                earned = 0.0
            scored.append(Scored(outcome, earned, ceiling, f"not run: {outcome.message}"))
        elif outcome.status == "grader-error":
            scored.append(Scored(outcome, 0.0, worth, "the grader failed on this check; your instructor has been told"))
        else:
            scored.append(Scored(outcome, 0.0, worth, outcome.message))
    return _point_to_causes(scored)


def _point_to_causes(scored: list[Scored]) -> list[Scored]:
    """A failure without a named cause points at one that has it: in the same function, or in one it builds on."""
    named = {}
    for item in scored:
        if CAUSE in item.feedback:
            named.setdefault(item.outcome.function, item)
    for item in scored:
        if item.score or item.outcome.status != "failed" or CAUSE in item.feedback:
            continue
        function = item.outcome.function
        if function in named:
            cause = named[function].feedback.split(CAUSE, 1)[1]
            item.feedback += f" Probably the same cause as in {named[function].outcome.check}: {cause}"
        else:
            broken = [f for f in BUILDS_ON.get(function, ()) if f in named or _fails(scored, f)]
            if broken:
                item.feedback += f" It builds on {broken[0]}, which fails its own checks: fix that first."
    return scored


def _fails(scored: list[Scored], function: str) -> bool:
    return any(i.outcome.function == function and i.outcome.status == "failed" for i in scored)
