"""The class's grades of record, decided once: the batch's late decision and its hold of flagged work, then every
result settled by the instructor's decisions (decisions.py). ``sdpa-grade batch`` decides; ``summary``, ``push`` and
the decision verbs only settle what the record already holds, whatever settings or times they are given.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

from autograder.assignment.deadline import apply, recorded_time
from autograder.atomic import write_atomically
from autograder.config import Settings
from autograder.course import decisions
from autograder.course.class_results import flags_of
from autograder.read.handed_in import HandedIn
from autograder.record import Result
from autograder.render.inert import shown
from autograder.report import load, stamp
from autograder.status import FILE_CHOICE


@dataclass
class Settled:
    """What deciding or settling the class changed: (student, score before, score after) for each score moved, and
    the students newly held."""

    moved: list[tuple[str, float, float]] = field(default_factory=list)
    held: list[str] = field(default_factory=list)
    kept_late: int = 0  # results whose late decision stands because this run's settings have no [deadline]


def decide_late(result: dict, name: str, handed: HandedIn, settings: Settings) -> tuple[dict, bool]:
    """``result`` with the late decision of this run's [deadline]: the time the gate found for it, else the time its
    record already holds (a later run without --times changes nothing). With no [deadline] in this run, the record's
    decision stands (True: kept): a policy is changed by a run that sets one, never dropped by one that forgets it."""
    record = Result.of(result)
    deadline = settings.deadline
    if deadline.due is None:
        return result, record.late is not None
    submitted, problem = handed.submitted_at, handed.time_problem
    if submitted is None and record.late is not None and recorded_time(record.late) is not None:
        submitted, problem = recorded_time(record.late), ""
    late = apply(deadline, name, record.raw_score, submitted, problem)
    return stamp(result, late), False


def held_for_flags(name: str, result: dict) -> decisions.Decision | None:
    """The batch's hold of a flagged result (every flag but the file's choice, which only says which file was
    graded), made once for the result it holds; None where it has no flag."""
    kinds = sorted({flag.kind for flag in flags_of(name, result) if flag.kind != FILE_CHOICE})
    if not kinds:
        return None
    graded_at = str(Result.of(result).provenance.get("graded_at") or "")
    reason = f"flagged: {', '.join(kinds)}"
    return decisions.Decision("hold", name, decisions.now(), reason, result=graded_at, by=decisions.GRADER)


def decide(handed: dict[str, HandedIn], targets: dict[str, Path], settings: Settings, out: Path,
           known: list[decisions.Decision]) -> Settled:  # fmt: skip
    """The batch's stage after grading: each graded result's late decision (``decide_late``), flagged work held where
    ``[record] hold_flagged`` is on, then every result settled by the decisions (``settle``)."""
    found = Settled()
    made: list[decisions.Decision] = []
    decided = {}  # student -> (their result as read, as decided now)
    for name in handed:
        if not targets[name].is_file():
            continue
        result = load(targets[name])
        if Result.of(result).grader_error:
            continue
        late, kept = decide_late(result, name, handed[name], settings)
        decided[name] = (result, late)
        found.kept_late += kept
        if settings.record.hold_flagged:
            hold = held_for_flags(name, late)
            graded_at = hold.result if hold else ""
            if hold and not any(d.student == name and d.result == graded_at and d.by == decisions.GRADER
                                for d in known):  # fmt: skip
                made.append(hold)
                found.held.append(name)
    if made:
        known = decisions.add(out, made)
    _settle(decided, targets, known, found)
    return found


def settle_all(targets: dict[str, Path], known: list[decisions.Decision]) -> Settled:
    """Every result in ``targets`` settled by the decisions the record holds (``known``); nothing decided anew."""
    found = Settled()
    results = {name: load(path) for name, path in targets.items() if path.is_file()}
    _settle({name: (result, result) for name, result in results.items()}, targets, known, found)
    return found


def _settle(results: dict[str, tuple[dict, dict]], targets: dict[str, Path], known: list, found: Settled) -> None:
    """Each (result as read, as decided) settled by ``known`` and written where it moved from what was read."""
    for name, (before, result) in results.items():
        settled = decisions.settle(result, name, known)
        if settled != before:
            write_atomically(targets[name], json.dumps(settled, indent=2))
            old, new = float(Result.of(before).score), float(Result.of(settled).score)
            if old != new:
                found.moved.append((name, old, new))


def tell(found: Settled, verb: str) -> None:
    """What deciding the class changed, on stderr: scores moved and students held (each a regrade of the record that
    ``sdpa-grade diff`` shows against an earlier copy of the results)."""
    if found.moved:
        moved = ", ".join(f"{shown(name)} {old:g} -> {new:g}" for name, old, new in found.moved)
        print(f"{verb}: the grade of record changed for {len(found.moved)} student(s): {moved}", file=sys.stderr)
    if found.held:
        print(
            f"{verb}: held for review (flagged; no export includes them until 'sdpa-grade clear'):"
            f" {', '.join(shown(name) for name in found.held)}",
            file=sys.stderr,
        )
    if found.kept_late:
        print(
            f"note: {found.kept_late} result(s) keep the late decision in their record: this run's settings have no"
            " [deadline] (a run that sets one decides again)",
            file=sys.stderr,
        )
