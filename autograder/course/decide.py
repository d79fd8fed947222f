"""``sdpa-grade hold | clear | override | extend | undo DIR STUDENT``: the instructor's decisions about one student's
grade of record, each kept in the results folder's decisions.jsonl (decisions.py) and settled into their result at
once, so that every export after it reads the decision.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from autograder.atomic import write_atomically
from autograder.config import Settings
from autograder.course import decisions
from autograder.course.identity import key
from autograder.course.roster import result_names
from autograder.read.handed_in import listing
from autograder.record import Result
from autograder.render.inert import shown
from autograder.report import load

NEEDS_REASON = ("hold", "override", "extend")


@dataclass(frozen=True)
class DecisionOptions:
    """One decision as the command line gave it, typed (cli.py builds it)."""

    verb: str  # hold, clear, override, extend or undo
    folder: Path  # the class folder, as batch took it
    student: str
    reason: str = ""
    json_dir: Path | None = None  # the results folder (default DIR-grades beside DIR)
    score: float | None = None  # override
    until: str = ""  # extend


def run_decision(options: DecisionOptions, settings: Settings) -> int:
    """Make the decision and settle the student's result; 2 (nothing kept) for a decision that cannot be made."""
    said = f"sdpa-grade {options.verb}"
    try:
        line = _decide(options, settings)
    except decisions.DecisionsError as error:
        print(f"{said}: {error}; nothing kept", file=sys.stderr)
        return 2
    print(line)
    return 0


def _decide(options: DecisionOptions, settings: Settings) -> str:
    out = options.json_dir or options.folder.parent / f"{options.folder.name}-grades"
    if not options.folder.is_dir():
        raise decisions.DecisionsError(f"{options.folder} is not a folder (the class folder, as batch took it)")
    names = list(listing(options.folder, settings.limits).students)
    student = _student(options.student, names)
    target = out / result_names(names)[student]
    if not target.is_file():
        raise decisions.DecisionsError(f"{shown(student)} has no result in {out}: grade them first (sdpa-grade batch)")
    result = load(target)
    if options.verb in NEEDS_REASON and not options.reason.strip():
        raise decisions.DecisionsError(f"{options.verb} keeps its reason with the grade: give --reason TEXT")
    known = decisions.read(out)
    decision = decisions.Decision(options.verb, student, decisions.now(), options.reason.strip())
    if options.verb == "override":
        most = Result.of(result).max_score
        if options.score is None or not 0 <= options.score <= most:
            raise decisions.DecisionsError(f"the score {options.score} is not between 0 and {most:g}, the maximum")
        decision = decisions.Decision("override", student, decision.at, decision.reason, score=options.score)
    elif options.verb == "extend":
        if decisions.no_policy(result):
            raise decisions.DecisionsError(
                f"{shown(student)}'s grade was decided under no [deadline] (nothing was late): an extension changes"
                " nothing; grade the class under the policy first (sdpa-grade batch --config FILE)"
            )
        until = decisions.extension_time(options.until)
        decision = decisions.Decision("extend", student, decision.at, decision.reason, until=until)
    elif options.verb == "undo" and not decisions.in_force(known, student):
        raise decisions.DecisionsError(f"{shown(student)} has no decision to undo")
    elif options.verb == "clear" and not Result.of(result).held:
        raise decisions.DecisionsError(f"{shown(student)}'s grade is not held")
    before = Result.of(result)
    known = decisions.add(out, [decision])
    settled = decisions.settle(result, student, known)
    write_atomically(target, json.dumps(settled, indent=2))
    after = Result.of(settled)
    held = f"; held: {after.held}" if after.held else ""
    was = f" (was {before.score:g})" if before.score != after.score else ""
    return (
        f"sdpa-grade {options.verb}: {shown(student)}'s grade of record is {after.score:g} of {after.max_score:g}"
        f"{was}{held}; kept in {out / decisions.DECISIONS}"
    )


def _student(given: str, names: list[str]) -> str:
    """The class's student that ``given`` names: exactly, else the one whose name compares as it (identity.key)."""
    if given in names:
        return given
    alike = [name for name in names if key(name) == key(given)]
    if len(alike) == 1:
        return alike[0]
    if alike:
        raise decisions.DecisionsError(f"{shown(given)} names {len(alike)} students: {', '.join(map(shown, alike))}")
    raise decisions.DecisionsError(f"no student {shown(given)} in the class (have: {', '.join(map(shown, names))})")
