"""The grade of record's last stage: the instructor's decisions about a class's results, kept, and each result settled
by them (docs/instructor.md, "The grade of record").

A batch writes each student's result (results.json: the checks' points, the knowledge check's, the late decision made
once, the flags). The instructor then decides, with a verb: ``hold`` (kept out of every export until cleared; flagged
work is held by the batch itself where ``[record] hold_flagged`` is true), ``clear``, ``override`` (a score and a
reason), ``extend`` (an extension granted after grading: the late decision made again from the policy the record
holds) and ``undo`` (the student's last decision taken back). Each is one line of ``decisions.jsonl`` in the results
folder, with when and why; nothing is ever removed from it, so the history stays. ``settle`` makes a result's score the
final one from its decisions and writes them under ``extra_data.record``; every export (the CSV, Canvas's and
Moodle's files, the LTI push, the dashboard, ``sdpa-grade diff``) reads that and decides nothing.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from autograder.assignment.deadline import apply, recorded_policy, recorded_time
from autograder.atomic import write_atomically
from autograder.record import Result
from autograder.report import stamp

# in the results folder, beside the students' results: one JSON object a line, a name no result file can have (they
# all end .json: roster.result_names)
DECISIONS = "decisions.jsonl"
VERBS = ("hold", "clear", "override", "extend", "undo")
GRADER = "sdpa-grade batch"  # who made a hold of flagged work (``by``); the instructor's decisions say "instructor"
MAX_FILE = 8 * 1024 * 1024  # decisions.jsonl is the instructor's: read whole, bounded all the same


class DecisionsError(ValueError):
    """A decisions.jsonl that cannot be read, or a decision that cannot be made: what to do instead."""


@dataclass(frozen=True)
class Decision:
    """One of the instructor's decisions (or the batch's hold of flagged work), as decisions.jsonl keeps it."""

    verb: str  # one of VERBS
    student: str  # the student's name, as the class folder names them
    at: str  # when it was made, ISO 8601 in UTC
    reason: str = ""
    score: float | None = None  # override: the score of record
    until: str = ""  # extend: the new due date, ISO 8601 with an offset
    result: str = ""  # a hold of flagged work: the graded_at of the result it holds ("" holds whatever is graded)
    by: str = "instructor"

    def fields(self) -> dict:
        return {key: value for key, value in dataclasses.asdict(self).items() if value not in (None, "")}

    @classmethod
    def of(cls, given: object) -> Decision:
        if not isinstance(given, Mapping):
            raise DecisionsError(f"a decision is not an object: {str(given)[:80]}")
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(given) - names
        if unknown or not {"verb", "student", "at"} <= set(given) or given["verb"] not in VERBS:
            raise DecisionsError(f"not a decision: {json.dumps(given)[:120]}")
        score = given.get("score")
        if score is not None and (not isinstance(score, (int, float)) or isinstance(score, bool)):
            raise DecisionsError(f"an override's score is not a number: {json.dumps(given)[:120]}")
        return cls(**{key: given[key] if key == "score" else str(given[key]) for key in given})


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def read(folder: Path) -> list[Decision]:
    """The decisions kept in ``folder`` (the results folder), oldest first; none where there is no file."""
    path = folder / DECISIONS
    if not path.is_file():
        return []
    if path.stat().st_size > MAX_FILE:
        raise DecisionsError(f"{path} is larger than {MAX_FILE} bytes: not a decisions file")
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise DecisionsError(f"{path} cannot be read ({error}); it is the instructor's record: restore it") from None
    found = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            found.append(Decision.of(json.loads(line)))
        except (json.JSONDecodeError, RecursionError, DecisionsError) as error:
            raise DecisionsError(f"{path}, line {number}: {error}; it is the instructor's record: restore it") from None
    return found


def add(folder: Path, decisions: Iterable[Decision]) -> list[Decision]:
    """``decisions`` appended to ``folder``'s record (one JSON object a line), written whole; the record as it is
    now."""
    kept = [*read(folder), *decisions]
    text = "".join(json.dumps(d.fields(), ensure_ascii=False) + "\n" for d in kept)
    write_atomically(folder / DECISIONS, text)
    return kept


@dataclass(frozen=True)
class Standing:
    """What a student's decisions in force come to, for one result of theirs."""

    held: str = ""  # why it is held ("" when it is not)
    override: Decision | None = None
    extension: Decision | None = None
    in_force: tuple[Decision, ...] = ()  # their decisions not taken back, oldest first


def in_force(decisions: Iterable[Decision], student: str) -> list[Decision]:
    """``student``'s decisions, less each one an ``undo`` took back (an undo takes back their last one in force)."""
    kept: list[Decision] = []
    for decision in decisions:
        if decision.student != student:
            continue
        if decision.verb == "undo":
            if kept:
                kept.pop()
        else:
            kept.append(decision)
    return kept


def standing(decisions: Iterable[Decision], student: str, graded_at: str) -> Standing:
    """``student``'s standing for their result graded at ``graded_at``: held by the last hold or clear in force (a
    hold of flagged work holds only the result it was made for), the last override, the last extension."""
    kept = in_force(decisions, student)
    held = ""
    override = extension = None
    for decision in kept:
        if decision.verb == "hold" and (not decision.result or decision.result == graded_at):
            held = decision.reason or "held"
        elif decision.verb == "clear":
            held = ""
        elif decision.verb == "override":
            override = decision
        elif decision.verb == "extend":
            extension = decision
    return Standing(held, override, extension, tuple(kept))


def _late_again(result: dict, student: str, until: str) -> dict:
    """``result`` with its late decision made again from the policy its record holds: with the extension ``until``
    ("" for the one the settings gave, or none)."""
    late = Result.of(result).late
    policy = recorded_policy(late or {})
    if late is None or policy is None:
        return result
    given = until or str(late.get("settings_extension") or "")
    extensions = {student: datetime.fromisoformat(given)} if given else {}
    decided = apply(dataclasses.replace(policy, extensions=extensions), student, Result.of(result).raw_score,
                    recorded_time(late), str(late.get("time_problem") or ""))  # fmt: skip
    kept = dataclasses.replace(decided, policy={**decided.policy, "settings_extension": late.get("settings_extension")
                                                or ""})  # fmt: skip
    return stamp(result, kept)


def settle(result: dict, student: str, decisions: Iterable[Decision]) -> dict:
    """``result`` as the grade of record: its late decision made again where an extension was granted (or taken
    back), its score the override's where there is one, and its decisions under ``extra_data.record``."""
    record = Result.of(result)
    found = standing(decisions, student, str(record.provenance.get("graded_at") or ""))
    now_extended = found.extension.until if found.extension else ""
    earlier = record.extra_data.get("record")
    extended = earlier.get("extension") if isinstance(earlier, dict) else None
    was_extended = str(extended.get("until") or "") if isinstance(extended, dict) else ""
    settled = _late_again(result, student, now_extended) if now_extended or was_extended else result
    again = Result.of(settled)
    earlier_computed = earlier.get("computed_score") if isinstance(earlier, dict) else None
    if again.late:
        computed = again.late.get("score", again.score)
    else:  # the score as written (an int stays an int), before any override
        computed = again.score if earlier_computed is None else earlier_computed
    extra = {key: value for key, value in again.extra_data.items() if key != "record"}
    if found.in_force or found.held:
        extra["record"] = {
            "held": found.held,
            "computed_score": computed,
            "override": _said(found.override, "score"),
            "extension": _said(found.extension, "until"),
            "decisions": [d.fields() for d in found.in_force],
        }
    score = found.override.score if found.override is not None else computed
    return {**settled, "score": score, "extra_data": extra}


def _said(decision: Decision | None, field: str) -> dict | None:
    if decision is None:
        return None
    return {field: getattr(decision, field), "reason": decision.reason, "at": decision.at}


def extension_time(text: str) -> str:
    """An extension's new due date as the record keeps it (ISO 8601 with an offset); DecisionsError otherwise."""
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise DecisionsError(f"--until {text!r} is not a time: ISO 8601 with an offset, such as"
                             " 2026-12-08T23:59:00+00:00") from None  # fmt: skip
    if when.tzinfo is None:
        raise DecisionsError(f"--until {text!r} has no offset: write it with one, such as +00:00")
    return when.isoformat()


def no_policy(result: dict) -> bool:
    """Whether ``result``'s record holds no late decision to make again (no [deadline] when it was graded)."""
    late = Result.of(result).late
    return late is None or recorded_policy(late) is None
