"""What makes a batch resumable: the output folder marked as no student's (``mark_output``), why each student is
graded in this run or keeps their result (``why_graded``: no result yet, the grader's own failure, or what changed
since it was graded, provenance.stale), and after Ctrl-C what is saved and what the same command would grade."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from autograder import provenance
from autograder.config import Settings
from autograder.read.handed_in import MARKER, HandedIn
from autograder.record import Result
from autograder.report import load

# Why a student is graded in this run (and counted so in its first line), besides provenance.REASONS
NEW, GRADER_FAILED, FORCED = "new", "grader error", "--force"


def why_graded(handed: HandedIn, target: Path, today: provenance.Now) -> str:
    """Why this student is graded now ("" to keep their result): no result yet, the grader's own failure, or
    what changed since their result was graded (provenance.stale)."""
    if not target.is_file():
        return NEW
    result = load(target)
    if Result.of(result).grader_error:
        return GRADER_FAILED
    return provenance.stale(result, handed, today)


@dataclass(frozen=True)
class Plan:
    """Who a batch grades in this run and why (``why``: student -> reason, "" to keep their result), judged against
    ``today``, what this run's grader, settings and device would record (provenance.now)."""

    today: provenance.Now
    why: dict[str, str]

    @property
    def todo(self) -> list[str]:
        return [name for name, reason in self.why.items() if reason]


def plan(handed: dict[str, HandedIn], targets: dict[str, Path], settings: Settings, device: str, force: bool) -> Plan:
    """Why each student of ``handed`` (the gate's records, in the roster's order) is graded in this run: all of them
    with ``force``, else ``why_graded`` against what this run would record."""
    today = provenance.now(settings, device)
    return Plan(today, {name: FORCED if force else why_graded(handed[name], targets[name], today) for name in handed})


def counts_line(reasons: list[str]) -> str:
    """ "file changed 2, settings changed 1": each reason with its count, in a fixed order."""
    counted = Counter(reasons)
    order = [*provenance.REASONS, GRADER_FAILED]
    return ", ".join(f"{word} {counted[word]}" for word in order if counted[word])


def why_line(why: dict[str, str], force: bool) -> str:
    """What the first line adds to "N to grade": how many are new, how many regraded and why."""
    if force:
        return f" (--force: all {len(why)} graded again)" if why else ""
    reasons = [word for word in why.values() if word]
    new = reasons.count(NEW)
    regraded = [word for word in reasons if word != NEW]
    parts = [f"{new} new"] if new and regraded else []
    if regraded:
        parts.append(f"{len(regraded)} regraded: {counts_line(regraded)}")
    return f" ({'; '.join(parts)})" if parts else ""


def left_line(roster: dict, targets: dict, today: provenance.Now, out: Path, started: float, force: bool) -> str:
    """After Ctrl-C: what is saved, what is stale, and what each command would grade now (one line). ``started``:
    when this run began grading (``time.time()``): a result written since is this run's."""
    now = {name: why_graded(roster[name], targets[name], today) for name in roster}
    saved = [name for name in roster if now[name] not in (NEW, GRADER_FAILED)]
    line = f"{len(saved)} of {len(roster)} results are saved in {out}"
    if force:  # a result this run has not reached is older than it, whatever its provenance says
        since = {name: targets[name].stat().st_mtime for name in saved}
        fresh = [name for name in saved if since[name] >= started]
        old = [name for name in saved if since[name] < started]
        stale = [now[name] for name in old if now[name]]
        stale_words = f" ({len(stale)} of them stale: {counts_line(stale)})" if stale else ""
        plain = sum(1 for name in roster if now[name])
        return (
            f"{line}: {len(fresh)} graded by this run, {len(old)} from before it, not graded again{stale_words}; "
            f"the same command (--force) grades all {len(roster)} again; without --force, {plain} would be graded"
        )
    rest = [now[name] for name in roster if now[name]]
    if not rest:
        return f"{line}, every one up to date; the same command grades nothing more"
    stale = [word for word in rest if word not in (NEW, GRADER_FAILED)]
    parts = [f"{len(saved) - len(stale)} up to date"]
    if stale:
        parts.append(f"{len(stale)} stale ({counts_line(stale)}), each kept until it is graded again")
    if len(rest) > len(stale):
        parts.append(f"{len(rest) - len(stale)} not graded yet")
    return f"{line}: {', '.join(parts)}; run the same command again to grade the {len(rest)} left"


def mark_output(folder: Path) -> None:
    """Make ``folder`` and leave the marker that keeps later batches from grading it as a student."""
    folder.mkdir(parents=True, exist_ok=True)
    marker = folder / MARKER
    if not marker.exists():
        marker.write_text("Written by sdpa-grade; sdpa-grade batch never takes this folder for a student's.\n")
