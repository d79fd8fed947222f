"""Points for outcomes: the only place that knows what a check is worth.

Integrity and timing are gated: they award nothing to a function that fails any of its
correctness checks, so an empty or broken submission cannot collect them.
"""

from __future__ import annotations

from dataclasses import dataclass

from autograder.config import Settings
from autograder.plugin import Outcome

GATED = {"integrity", "timing"}


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
    return scored
