"""``sdpa-grade push``: a class's final scores into the LMS by LTI 1.3 Assignment and Grade Services (docs/lti.md).

The steps, in order: the [lti] settings and the key file are checked before anything is sent; an access token is
asked for with a JWT assertion signed by the tool's private key (RFC 7523, PyJWT); the platform's Names and Role
Provisioning Services membership gives each learner's LTI user id, matched to the class by ``identity``; the line
item is found by its resourceId (created only where none has it, so that a re-push never adds a column); its
results give each learner's score on the platform now; then one score per matched student, or for a dry run the
lines that say what would be sent. The scores are the ones the CSV holds (grades_csv.final_scores); the key, the
token and the requests are lti_client.py's.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass, field

from autograder.config import Lti, url_problem
from autograder.course.class_results import ClassResults
from autograder.course.identity import key, twins_line
from autograder.course.lti_client import (
    LINEITEM,
    LINEITEMS,
    MEMBERS,
    RESULTS,
    SCORE,
    URL_CHARS,
    Clock,
    Failed,
    NotJson,
    OutOfTime,
    Platform,
    PushError,
    iso,
    quoted,
    sub_url,
    with_query,
)
from autograder.render.inert import inert
from autograder.status import GRADER_ERROR

LEARNER = "Learner"  # the last part of the role's URI (membership#Learner), or the short form itself
# the member's fields that hold each identity, first found first. Canvas's and Moodle's memberships carry email (by
# their privacy settings) and lis_person_sourcedid (Canvas: the SIS id; Moodle: the ID number), never a login: login is
# for platforms that send one
IDENTITY_FIELDS = {"login": ("login_id", "ext_user_username", "username"), "email": ("email",),
                   "sis_id": ("lis_person_sourcedid",)}  # fmt: skip


class IdentityMismatch(PushError):
    """``identity`` cannot name the class's students on this platform: a setting to change (exit 2), found before any
    column is created."""


@dataclass
class Pushed:
    """What a push did: each line to print, and the students sent, already on the platform, and not sent (and why)."""

    lines: list[str] = field(default_factory=list)
    sent: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # the platform held their score already: not sent again
    not_sent: dict[str, str] = field(default_factory=dict)


def _active_learners(members: list) -> list[dict]:
    """The members with the role Learner and the status Active."""
    found = []
    for member in members:
        if not isinstance(member, dict) or member.get("status", "Active") != "Active":
            continue
        roles = [str(role).rsplit("#", 1)[-1].rsplit("/", 1)[-1] for role in member.get("roles") or []]
        if LEARNER in roles:
            found.append(member)
    return found


def learners(members: list, identity: str) -> dict[str, str]:
    """The active learners of a membership: their identity value -> their LTI user id (e-mail lower-cased)."""
    found = {}
    for member in _active_learners(members):
        value = next((str(member[f]) for f in IDENTITY_FIELDS[identity] if member.get(f)), "")
        if value and member.get("user_id"):
            found[key(value)] = str(member["user_id"])
    return found


def unsent_identity(members: list, identity: str) -> str:
    """Why ``identity`` names nobody on this platform ("" where it can): its learners carry none of its fields. Says
    the fields they do carry, and the identities those allow."""
    them = _active_learners(members)
    fields = IDENTITY_FIELDS[identity]
    if not them or any(member.get(f) for member in them for f in fields):
        return ""
    carried = sorted({str(f) for member in them for f, value in member.items() if value not in (None, "", [], {})})
    usable = [name for name, held in IDENTITY_FIELDS.items() if any(f in carried for f in held)]
    wanted = f"{', '.join(fields[:-1])} or {fields[-1]}" if len(fields) > 1 else fields[0]
    todo = (f"set [lti] identity to {' or '.join(usable)}" if usable else
            "share the members' e-mail or SIS id with the tool in the LMS's privacy settings")  # fmt: skip
    they = quoted(", ".join(carried))
    return f"identity = {identity}: the platform's learners carry no {wanted}; they carry {they}: {todo}"


def push(scores: dict[str, tuple[float, float]], lti: Lti, dry_run: bool) -> Pushed:
    """Send ``scores`` (student -> (final score, maximum)) as ``lti`` says; for a dry run, say what would be sent.

    Within the push's budget: once it is spent, or after ``failures_in_a_row`` scores the platform did not answer,
    the students not yet sent are listed and nothing more is tried. A score the platform already holds is not sent
    again, so a rerun sends only what is missing."""
    done, platform = Pushed(), Platform(lti)
    try:
        known, item, current = _column(platform, lti, scores, dry_run, done)
    except Failed as error:
        raise PushError(str(error)) from None
    by_identity = {key(name): name for name in scores}
    stopped, in_a_row = "", 0
    for name, (score, most) in scores.items():
        who = inert(name, keep_newlines=False)
        user = known.get(key(name))
        if user is None:
            done.not_sent[name] = f"no learner on the platform has {lti.identity} {who}"
        elif dry_run:
            before = current.get(user, (None, None))[0]  # the platform's: a number, or anything else shown as it is
            now = f"{before:g}" if isinstance(before, (int, float)) else quoted(before or "none")
            done.lines.append(f"{who}: on the platform {now}, new {score:g} of {most:g}")
        elif stopped:
            done.not_sent[name] = f"not tried: {stopped}"
        elif _holds(current.get(user), score, most):
            done.kept.append(name)
            done.lines.append(f"{who}: {score:g} of {most:g} already on the platform")
        else:
            try:
                done.lines.append(f"{who}: {score:g} of {most:g} sent{_send_score(platform, item, user, score, most)}")
                done.sent.append(name)
                in_a_row = 0
            except OutOfTime:
                stopped = f"the push's budget ([lti] budget = {lti.budget:g} s) was spent: push again to send it"
                done.not_sent[name] = stopped
            except Failed as error:
                done.not_sent[name] = str(error) + _skew_note(error, platform.clock)
                in_a_row = in_a_row + 1 if error.transient else 0
                if in_a_row >= lti.failures_in_a_row:
                    stopped = (f"the push stopped after {in_a_row} scores in a row got no answer: push again to send"
                               " it")  # fmt: skip
    if platform.clock.lead():
        done.lines.append(f"the platform's clock reads {math.ceil(platform.clock.ahead)} s ahead of this machine's:"
                          f" scores are stamped {math.ceil(platform.clock.lead())} s ahead, after what it"
                          " holds")  # fmt: skip
    unknown = sorted(value for value in known if value not in by_identity)
    if unknown:
        done.lines.append(f"learners with no result in this class ({lti.identity}): {', '.join(map(quoted, unknown))}")
    return done


def _column(platform: Platform, lti: Lti, scores: dict, dry_run: bool, done: Pushed) -> tuple[dict, str, dict]:
    """The learners by identity, the line item (found, or created unless a dry run) and its results (user id ->
    (score, maximum)): everything read before the first score, any failure here sending nothing."""
    members = platform.pages(lti.memberships_url, MEMBERS, "members")
    unsent = unsent_identity(members, lti.identity)
    if unsent:
        raise IdentityMismatch(unsent)
    known = learners(members, lti.identity)
    if scores and not any(key(name) in known for name in scores):
        raise IdentityMismatch(
            f"none of the class's {len(scores)} students is a learner of the platform by {lti.identity} (the"
            f" class's names are its folders' names): name the folders by the learners' {lti.identity}, or set"
            " [lti] identity to the field they are named by"
        )
    items = platform.pages(with_query(lti.lineitems_url, resource_id=lti.resource_id), LINEITEMS, None)
    ours = [item for item in items if isinstance(item, dict) and item.get("resourceId") == lti.resource_id]
    item = str(ours[0].get("id", "")) if ours else ""
    current: dict[str, tuple] = {}
    if item:
        if url_problem(item):
            raise Failed(f"the line item's id {quoted(item)}: {url_problem(item)}")
        current = _results(platform, item)
        done.lines.append(f"line item {quoted(item, URL_CHARS)} (resourceId {lti.resource_id})")
    elif dry_run:
        done.lines.append(f"line item: none has resourceId {lti.resource_id}; the push would create it")
    else:
        from autograder.course.grades_csv import maximum_of_record

        most = maximum_of_record(scores)[0]  # the record's (push_class refuses a class with two), not the top score
        new = {"label": lti.line_item_label, "scoreMaximum": most, "resourceId": lti.resource_id}
        _, made, _ = platform.call("POST", lti.lineitems_url, LINEITEM, new, once=True)  # never two
        item = str((made or {}).get("id", "")) if isinstance(made, dict) else ""
        if not item or url_problem(item):
            raise Failed(f"the created line item has no usable id ({quoted(json.dumps(made))})")
        done.lines.append(f"line item {quoted(item, URL_CHARS)} (resourceId {lti.resource_id}): created")
    return known, item, current


def _results(platform: Platform, item: str, user: str = "") -> dict[str, tuple]:
    """A line item's results (one learner's, given ``user``): user id -> (resultScore, resultMaximum) as they are."""
    url = sub_url(item, "results")
    results = platform.pages(with_query(url, user_id=user) if user else url, RESULTS, None)
    return {
        str(r.get("userId")): (r.get("resultScore"), r.get("resultMaximum")) for r in results if isinstance(r, dict)
    }


def _holds(result: tuple | None, score: float, most: float) -> bool:
    """Whether a result the platform gave is this score (and this maximum, where it gives one)."""
    given, maximum = result or (None, None)
    if not isinstance(given, (int, float)) or abs(given - score) > 1e-9 * max(1.0, abs(score)):
        return False
    return not isinstance(maximum, (int, float)) or abs(maximum - most) <= 1e-9 * max(1.0, abs(most))


def _send_score(platform: Platform, item: str, user: str, score: float, most: float) -> str:
    """One learner's score sent (Failed where it was not), each try with a newer timestamp; a 2xx whose body is not
    JSON is checked by reading the score back. What to add to the line that says it was sent."""
    last = [0.0]

    def payload() -> dict:
        last[0] = platform.clock.stamp(after=last[0])
        return {"userId": user, "scoreGiven": score, "scoreMaximum": most, "activityProgress": "Completed",
                "gradingProgress": "FullyGraded", "timestamp": iso(last[0])}  # fmt: skip

    try:
        platform.call("POST", sub_url(item, "scores"), LINEITEM, payload, kind=SCORE)
        return ""
    except NotJson as error:
        if _holds(_results(platform, item, user).get(user), score, most):
            return f" (the platform answered HTTP {error.code} with no JSON; read back: stored)"
        raise Failed(f"{error}; read back, the platform does not hold this score") from None


def _skew_note(error: Failed, clock: Clock) -> str:
    """What a score's refusal for its timestamp (Canvas 400, Moodle 409) may mean: the clocks."""
    if error.code not in (400, 409) or "timestamp" not in str(error).lower():
        return ""
    if clock.lead():
        return (f" (the platform's clock reads {math.ceil(clock.ahead)} s ahead of this machine's, and it holds a newer"
                " score's time: push again)")  # fmt: skip
    return " (the platform holds a newer score's time than this machine's clock: check both clocks, and push again)"


def push_class(stats: ClassResults, lti: Lti, dry_run: bool, offline: bool = False) -> int:
    """``sdpa-grade push``, once the class is summarised: the CSV's final scores of the students graded (a grader
    error has no grade to send), pushed, or for an offline dry run, said with the identity each would go to."""
    from autograder.course.grades_csv import final_scores, maximum_of_record

    finals = final_scores(stats)
    skipped = {s.name: "the grader failed on this submission: grade it again first" for s in stats.present
               if s.status == GRADER_ERROR}  # fmt: skip
    skipped.update({s.name: f"held for review ({s.held}); sdpa-grade clear DIR STUDENT releases it"
                    for s in stats.present if s.held and s.name not in skipped})  # fmt: skip
    scores = {name: (float(score), float(most)) for name, (score, most) in finals.items() if name not in skipped}
    if clash := twins_line([*scores, *skipped]):  # before anything: one learner would get two students' scores
        print(f"sdpa-grade push: {clash}; nothing sent", file=sys.stderr)
        return 2
    if problem := maximum_of_record(scores)[1]:  # one column, one maximum: never scores out of two
        print(f"sdpa-grade push: {problem}; nothing sent", file=sys.stderr)
        return 2
    if offline:
        return offline_dry_run(scores, lti, skipped)
    return run_push(scores, lti, dry_run, skipped)


def offline_dry_run(scores: dict[str, tuple[float, float]], lti: Lti, skipped: dict[str, str]) -> int:
    """``push --dry-run --offline``: each score that would be sent and the identity it would go to, no platform asked
    (so no learner is looked up: whether the platform has one is unchecked). Exit 0."""
    print(f"offline: the platform was not asked; each score would go to the learner whose {lti.identity} is the"
          " student's name, if the platform has one (a dry run without --offline checks)")  # fmt: skip
    for name, (score, most) in scores.items():
        who = inert(name, keep_newlines=False)
        to = inert(key(name), keep_newlines=False)
        print(f"{who}: {score:g} of {most:g} would be sent to the learner whose {lti.identity} is {to}")
    for name, why in skipped.items():
        print(f"not sent: {inert(name, keep_newlines=False)}: {why}", file=sys.stderr)
    everyone = len(scores) + len(skipped)
    print(f"sdpa-grade push: dry run (offline): {len(scores)} of {everyone} students' scores would be sent; nothing"
          " sent", file=sys.stderr)  # fmt: skip
    return 0


def run_push(scores: dict[str, tuple[float, float]], lti: Lti, dry_run: bool, skipped: dict[str, str]) -> int:
    """Print what was sent (or would be), each student not sent and why, and the summary: 1 where anything was not
    sent (the settings and the key are checked before, by ``not_ready``)."""
    try:
        done = push(scores, lti, dry_run)
    except PushError as error:
        everyone = len(scores) + len(skipped)
        print(f"sdpa-grade push: {error}; nothing sent (0 of {everyone} students' scores)", file=sys.stderr)
        return 2 if isinstance(error, IdentityMismatch) else 1
    for line in done.lines:
        print(line)
    not_sent = {**skipped, **done.not_sent}
    for name, why in not_sent.items():
        print(f"not sent: {inert(name, keep_newlines=False)}: {why}", file=sys.stderr)
    everyone = len(scores) + len(skipped)
    if dry_run:
        would = len(scores) - len(done.not_sent)
        print(
            f"sdpa-grade push: dry run: {would} of {everyone} students' scores would be sent; nothing sent",
            file=sys.stderr,
        )
        return 0
    kept = f", {len(done.kept)} already on the platform" if done.kept else ""
    rest = f"; {len(not_sent)} not sent (listed above)" if not_sent else ""
    print(f"sdpa-grade push: {len(done.sent)} of {everyone} students' scores sent{kept}{rest}", file=sys.stderr)
    return 1 if not_sent else 0
