"""A course's deadline policy and what it does to one score: due date, grace, late penalty, extensions.

The policy is the ``[deadline]`` section of the settings (config.py reads it through ``parse``):

    [deadline]
    due = "2026-12-01T23:59:00-05:00"   # ISO 8601 with an offset; leave out (or "") for no deadline
    grace_minutes = 15                   # a submission this little after the due date is on time
    policy = "per_day"                   # none, zero, per_day or per_hour
    percent = 10                         # per_day / per_hour: percent of the raw score taken per day (hour) late
    max_late = 5                         # per_day / per_hour: more than 5 days (hours) late scores 0; 0: no cap
    [deadline.extensions]
    alice = "2026-12-03T23:59:00-05:00"  # alice's own due date

Lateness counts from the student's due date (their extension's, where they have one), in whole days or
hours begun: 2 hours late is 1 day late under per_day. The grace period only forgives: a submission
inside it is on time, one after it is late by its full time since the due date. A submission's time comes
only from where the student cannot write it (nbgrader's collected timestamp.txt, Gradescope's
submission_metadata.json outside the upload, a CSV of times: autograder/read/handed_in.py), never a file's
modification time nor a time file inside the student's own upload; where a time is needed and missing, nothing
is taken off and the student is flagged for review.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import MappingProxyType

POLICIES = ("none", "zero", "per_day", "per_hour")
KEYS = ("due", "grace_minutes", "policy", "percent", "max_late", "extensions")
UNIT = {"per_day": timedelta(days=1), "per_hour": timedelta(hours=1)}


class DeadlineError(ValueError):
    """A deadline setting that cannot be used; the message names the key."""


@dataclass(frozen=True)
class Deadline:
    """[deadline]: when the assignment is due and what lateness costs."""

    due: datetime | None = None  # None: no deadline, nothing is ever late
    grace_minutes: float = 0.0
    policy: str = "none"
    percent: float = 0.0
    max_late: float = 0.0
    extensions: Mapping[str, datetime] = field(default_factory=lambda: MappingProxyType({}))

    def due_for(self, student: str) -> datetime | None:
        return self.extensions.get(student, self.due)


@dataclass(frozen=True)
class Late:
    """What the policy did to one score: the fields results, the CSV and the dashboard carry."""

    raw_score: float
    late_penalty: float  # points taken off
    score: float  # raw_score - late_penalty
    submitted_at: str  # ISO 8601, "" when unknown
    hours_late: float  # 0 when on time (or unknown)
    extension: str  # the extended due date used, "" for none
    missing_time: bool = False  # a deadline is set and this submission's time is unknown: flagged, no penalty
    time_problem: str = ""  # with missing_time: why there is no time (handed_in.with_time), for the flag
    policy: Mapping[str, object] = field(default_factory=dict)  # the policy it was decided under (``policy_fields``)

    def fields(self) -> dict:
        return {
            **self.policy,
            "raw_score": self.raw_score,
            "late_penalty": self.late_penalty,
            "score": self.score,
            "submitted_at": self.submitted_at,
            "hours_late": self.hours_late,
            "extension": self.extension,
            "missing_time": self.missing_time,
            "time_problem": self.time_problem,
        }


def parse_time(text: object, label: str, where: str = "") -> datetime:
    """An ISO 8601 time with its offset (``Z`` for UTC); anything else is refused, the message starting ``label``."""
    example = "such as 2026-12-01T23:59:00-05:00"
    label = f"{label} {text!r}" + (f" from {where}" if where else "")
    if not isinstance(text, str):
        raise DeadlineError(f"{label}: expected an ISO 8601 date and time with an offset, {example}")
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise DeadlineError(f"{label}: not an ISO 8601 date and time, {example}") from None
    if moment.tzinfo is None:
        raise DeadlineError(f"{label}: give its time zone as an offset, such as -05:00 or Z")
    return moment


def parse_given_time(text: str, label: str) -> datetime:
    """A submission time given on the command line (``--submitted-at``): ISO 8601 with its offset, or nbgrader's own
    format, as its timestamp.txt holds it (``2026-03-01 12:00:00.123456 UTC``, or an offset such as ``+0100``)."""
    try:
        return parse_time(text, label)
    except DeadlineError:
        zoned = isinstance(text, str) and (found := _NBGRADER.match(text[:200])) is not None and found[3] is not None
        moment = parse_nbgrader_timestamp(text) if zoned else None
        if moment is None:
            raise DeadlineError(
                f"{label} {text!r}: expected ISO 8601 with an offset, such as 2026-12-01T23:59:00-05:00, or nbgrader's"
                " timestamp.txt format, such as 2026-12-01 23:59:00.000000 UTC (a time without its zone is refused)"
            ) from None
        return moment


def late_by(hours: float) -> str:
    """How late, worded at a precision that never reads 0 for a late submission: seconds under a minute, minutes
    and seconds under an hour, hours (one decimal) from one hour on."""
    seconds = math.ceil(round(hours * 3600, 2))  # whole seconds begun (hours_late is rounded to 3.6 ms)
    if hours * 3600 < 1:
        return "less than 1 s"
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        minutes, seconds = divmod(seconds, 60)
        return f"{minutes} min {seconds} s" if seconds else f"{minutes} min"
    return f"{hours:.1f} h"


def parse(table: Mapping, where: str) -> Deadline:
    """The [deadline] section as written in a settings file; errors name the key, the value and ``where``."""

    def bad(key: str, value: object, why: str) -> DeadlineError:
        return DeadlineError(f"Invalid deadline.{key} {value!r} from {where}: {why}")

    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        import difflib

        near = difflib.get_close_matches(str(unknown[0]), KEYS, n=1)
        hint = f"; did you mean deadline.{near[0]}?" if near else f"; known: {', '.join(KEYS)}"
        raise DeadlineError(f"unknown setting deadline.{unknown[0]} in {where}{hint}")
    due_text = table.get("due", "")
    due = parse_time(due_text, "Invalid deadline.due", where) if due_text != "" else None
    numbers = {}
    for key in ("grace_minutes", "percent", "max_late"):
        value = table.get(key, 0)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or not math.isfinite(value):
            raise bad(key, value, "expected a non-negative number")
        numbers[key] = float(value)
    if numbers["percent"] > 100:
        raise bad("percent", table["percent"], "expected at most 100")
    policy = table.get("policy", "none")
    if policy not in POLICIES:
        raise bad("policy", policy, f"expected one of {', '.join(POLICIES)}")
    extensions = table.get("extensions", {})
    if not isinstance(extensions, Mapping):
        raise bad("extensions", extensions, "expected a table of student = due date")
    moved = {str(s): parse_time(t, f"Invalid deadline.extensions.{s}", where) for s, t in extensions.items()}
    if moved and due is None:
        raise bad("extensions", dict(extensions), "extensions need a due date (deadline.due)")
    return Deadline(due, numbers["grace_minutes"], policy, numbers["percent"], numbers["max_late"],
                    MappingProxyType(moved))  # fmt: skip


def apply(deadline: Deadline, student: str, raw_score: float, submitted_at: datetime | None,
          time_problem: str = "") -> Late:  # fmt: skip
    """The policy applied to one student's score; ``time_problem`` says why ``submitted_at`` is None, where it is."""
    shown = submitted_at.isoformat() if submitted_at is not None else ""
    due = deadline.due_for(student)
    extension = deadline.extensions[student].isoformat() if student in deadline.extensions else ""
    policy = {**policy_fields(deadline), "settings_extension": extension}
    if due is None:
        return Late(raw_score, 0.0, raw_score, shown, 0.0, extension, policy=policy)
    if submitted_at is None:
        return Late(raw_score, 0.0, raw_score, "", 0.0, extension, missing_time=True, time_problem=time_problem,
                    policy=policy)  # fmt: skip
    late = submitted_at - due
    if late <= timedelta(minutes=deadline.grace_minutes) or late <= timedelta(0):
        return Late(raw_score, 0.0, raw_score, shown, 0.0, extension, policy=policy)
    hours = round(late / timedelta(hours=1), 6) or late / timedelta(hours=1)  # never 0 for a late submission
    fraction = 0.0
    if deadline.policy == "zero":
        fraction = 1.0
    elif deadline.policy in UNIT:
        units = math.ceil(late / UNIT[deadline.policy])  # whole days (hours) begun
        fraction = 1.0 if deadline.max_late and units > deadline.max_late else min(1.0, units * deadline.percent / 100)
    penalty = round(raw_score * fraction, 6)
    return Late(raw_score, penalty, round(raw_score - penalty, 6), shown, hours, extension, policy=policy)


POLICY_KEYS = ("due", "grace_minutes", "policy", "percent", "max_late")


def policy_fields(deadline: Deadline) -> dict:
    """The policy a late decision was made under, as the record keeps it (``extra_data.late``): the due date before
    any extension, the grace, the policy and its numbers. The grade of record is decided once from these, and an
    extension granted after grading (``sdpa-grade extend``) is decided again from them, never from a later run's
    settings."""
    due = deadline.due.isoformat() if deadline.due is not None else ""
    return {"due": due, "grace_minutes": deadline.grace_minutes, "policy": deadline.policy,
            "percent": deadline.percent, "max_late": deadline.max_late}  # fmt: skip


def recorded_policy(late: Mapping) -> Deadline | None:
    """The Deadline a record's late fields were decided under (``policy_fields``), with no extension; None for a
    record that does not hold one (decided before the policy was recorded, or written by hand)."""
    try:
        due = datetime.fromisoformat(str(late["due"]))
        numbers = {key: float(late[key]) for key in ("grace_minutes", "percent", "max_late")}
        policy = str(late["policy"])
    except (KeyError, TypeError, ValueError):
        return None
    if due.tzinfo is None or policy not in POLICIES:
        return None
    return Deadline(due, numbers["grace_minutes"], policy, numbers["percent"], numbers["max_late"])


def recorded_time(late: Mapping) -> datetime | None:
    """The submission time a record's late fields hold, or None."""
    try:
        when = datetime.fromisoformat(str(late.get("submitted_at") or ""))
    except ValueError:
        return None
    return when if when.tzinfo is not None else None


# nbgrader's timestamp.txt: its timestamp_format, "%Y-%m-%d %H:%M:%S.%f %Z" by default ("... UTC"); a zone may
# also be an offset such as +0100 or -05:00. A time written without a zone is nbgrader's default zone, UTC.
_NBGRADER = re.compile(
    r"^\s*(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?)\s*([A-Za-z]+|[+-]\d{2}:?\d{2})?\s*$"
)
_ZONES = {"UTC": timezone.utc, "GMT": timezone.utc, "Z": timezone.utc}


def parse_nbgrader_timestamp(text: str) -> datetime | None:
    """A time as nbgrader writes it in timestamp.txt; None for text it cannot be (the student is then flagged)."""
    found = _NBGRADER.match(text[:200])
    if not found:
        return None
    day, clock, zone = found.groups()
    try:
        moment = datetime.fromisoformat(f"{day}T{clock}")
    except ValueError:
        return None
    if zone is None:
        return moment.replace(tzinfo=timezone.utc)
    if zone.upper() in _ZONES:
        return moment.replace(tzinfo=_ZONES[zone.upper()])
    if zone[0] in "+-":
        digits = zone[1:].replace(":", "")
        offset = timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
        if offset >= timedelta(hours=24):  # +99:00 is no time zone: the student is flagged, not the class stopped
            return None
        return moment.replace(tzinfo=timezone(offset if zone[0] == "+" else -offset))
    return None  # a zone name other than UTC: ambiguous without a zone database, so unknown


TIMESTAMP = "timestamp.txt"  # nbgrader's, in each collected submission folder


def read_times(path: Path) -> dict[str, datetime]:
    """``--times FILE``: a CSV with columns ``student,submitted_at`` (ISO 8601 with an offset); errors name the row."""
    import csv

    try:
        if path.stat().st_size > 20 * 1024 * 1024:
            raise DeadlineError(f"--times {path}: larger than 20 MiB")
        with open(path, newline="", encoding="utf-8-sig") as handle:
            rows = list(csv.DictReader(handle))
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise DeadlineError(f"--times {path} cannot be read: {error}") from None
    if rows and not {"student", "submitted_at"} <= set(rows[0]):
        raise DeadlineError(f"--times {path}: expected the columns student,submitted_at (has: {', '.join(rows[0])})")
    times = {}
    for number, row in enumerate(rows, start=2):
        student = (row.get("student") or "").strip()
        if not student:
            raise DeadlineError(f"--times {path}, row {number}: no student")
        times[student] = parse_time(row.get("submitted_at") or "", f"--times {path}, row {number}: submitted_at")
    return times


def gradescope_time(path: Path, deadline: Deadline) -> tuple[str, datetime | None, Deadline]:
    """From Gradescope's ``submission_metadata.json``: the student (their e-mail), the submission's time, and the
    deadline to apply. Where the settings set a policy but no due date, Gradescope's due date for the assignment is
    the due date. An extension granted in Gradescope (the student's own due date, later than the assignment's)
    applies either way: under Gradescope's due date, the student's own due date; under the settings' due date, the
    settings' due date moved by the same length (2 days late with a 3 days' extension is on time), or the settings'
    own extension for the student where that is later. An unreadable file gives no time."""
    import json

    try:
        if path.stat().st_size > 4 * 1024 * 1024:
            return "", None, deadline
        metadata = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        return "", None, deadline
    if not isinstance(metadata, dict):
        return "", None, deadline
    users = metadata.get("users") if isinstance(metadata.get("users"), list) else []
    user = users[0] if users and isinstance(users[0], dict) else {}
    student = str(user.get("email") or user.get("id") or "")
    try:
        submitted = parse_time(metadata.get("created_at"), "created_at")
    except DeadlineError:
        submitted = None
    if deadline.due is None and deadline.policy == "none":
        return student, submitted, deadline
    assignment = metadata.get("assignment") if isinstance(metadata.get("assignment"), dict) else {}
    own = user.get("assignment") if isinstance(user.get("assignment"), dict) else {}
    try:
        due = parse_time(assignment.get("due_date"), "assignment.due_date")
        own_due = parse_time(own["due_date"], "due_date") if own.get("due_date") else due
    except DeadlineError:
        return student, submitted, deadline
    extended = own_due - due  # the extension granted in Gradescope, as a length (zero: none)
    if deadline.due is None:
        moved = {student: own_due} if extended > timedelta(0) else {}
        return student, submitted, replace(deadline, due=due, extensions=MappingProxyType({**deadline.extensions,
                                                                                            **moved}))  # fmt: skip
    if extended <= timedelta(0):
        return student, submitted, deadline
    own_due = max(deadline.due + extended, deadline.extensions.get(student, deadline.due))
    return student, submitted, replace(deadline, extensions=MappingProxyType({**deadline.extensions,
                                                                              student: own_due}))  # fmt: skip
