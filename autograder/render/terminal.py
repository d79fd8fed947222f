"""What the terminal shows, worded here from fields: one result's table (``sdpa-grade grade FILE``, ``batch
--show``) and a class's summary (``sdpa-grade batch``), each from the record alone (record.Result,
class_results.ClassResults). Text from a result is made inert (render/inert.py): shown, never run by the terminal."""

from __future__ import annotations

from autograder.record import Result
from autograder.render.inert import inert, shown
from autograder.render.text import describe, graded_file_text, late_sentence, neither_count, reason, says_passed
from autograder.status import FILE_CHOICE, NO_TIME


def table(result: dict, width: int = 100) -> str:
    """One line per check (points and feedback), then the total. Text from the result is made inert (render/inert.py):
    a student's escape sequences are shown, never run by the terminal; its lines stay indented under their check."""
    record = Result.of(result)
    lines = [f"{'check':<56} {'points':>9}  feedback", "-" * width]
    for test in record.tests:
        points = f"{test.score:g}/{test.max_score:g}"
        feedback = "ok" if says_passed(test.output) else inert(test.output)
        first, *more = feedback.split("\n")
        lines.append(f"{inert(test.name, keep_newlines=False):<56} {points:>9}  {first}")
        lines += [f"    {line}" for line in more]  # a picture's block grid, under the feedback
    lines.append("-" * width)
    lines.append(f"{'total':<56} {record.score:g}/{record.max_score:g}")
    if record.late and late_sentence(record.late, float(record.max_score)):
        lines.append(late_sentence(record.late, float(record.max_score)))
    if record.ungradable:
        lines.append(f"not graded: {inert(record.ungradable)}")
    note = graded_file_text(record.extra_data)
    if note:
        lines.append(f"flagged: {inert(note)}")
    return "\n".join(lines)


# the summary's words for a student's own flags (the dashboard writes the flags' kinds)
OWN_FLAGS = {"ungradable": "ungradable", "grader error": "grader_error"}


def summary(stats, skipped: dict[str, str] | None = None) -> str:
    """Per check, how many passed (and kept their points, or were withheld); per named mistake, how many submissions
    showed it; what to review; grading times; and the class folder's entries that are no student, each with why
    (``skipped``: handed_in.listing)."""
    lines = [f"Class summary: {len(stats.present)} submissions", "", f"{'check':<62} passed"]
    lines += [f"{name:<62} {stats.passed[name]}/{count}{_kept(stats, name)}" for name, count in stats.seen.items()]
    lines += ["", "Named mistakes (submissions showing each):"]
    lines += [f"{count:4d}  {describe(key)}" for key, count in stats.mistakes.most_common()] or ["   none"]
    lines += ["", *_review_and_times(stats)]
    if skipped:
        entries = "1 entry" if len(skipped) == 1 else f"{len(skipped)} entries"
        lines += ["", f"Not graded as students ({entries} of the class folder):"]
        lines += [f"   {shown(name)}: {why}" for name, why in skipped.items()]
    return "\n".join(lines)


def _kept(stats, name: str) -> str:
    """After a check's passes: where it kept its points by error carried forward, and where it was withheld."""
    said = neither_count(stats.carried[name], stats.withheld[name])
    return f" ({said})" if said else ""


def _review_and_times(stats) -> list[str]:
    """Submissions to look at (integrity flags with their reasons, ungradable, grader errors) and grading times."""
    review = []
    for student in stats.present:
        reasons = [
            f"{flag.check}: {reason(flag.kind)}"
            for flag in student.flags
            if flag.kind not in (*OWN_FLAGS, FILE_CHOICE, NO_TIME)
        ]
        reasons += [word for kind, word in OWN_FLAGS.items() if any(flag.kind == kind for flag in student.flags)]
        reasons += [flag.detail for flag in student.flags if flag.kind in (FILE_CHOICE, NO_TIME)]
        if reasons:
            review.append(f"   {shown(student.name)}: {'; '.join(reasons)}")
    seconds = sorted(student.seconds for student in stats.present)
    times = f"median {seconds[len(seconds) // 2]:.1f} s, slowest {seconds[-1]:.1f} s" if seconds else "none"
    header = "Flagged for review (integrity flags, ungradable, grader errors; see each student's feedback):"
    return [header, *(review or ["   none"]), "", f"Grading time per submission: {times}"]
