"""The nbgrader path's late penalties: the course's [deadline] policy, as ``sdpa-grade`` applies it.

nbgrader asks a ``LateSubmissionPlugin`` for a notebook's penalty in points, and only for a submission
later than the due date nbgrader itself holds (the assignment's ``duedate`` in its gradebook, plus the
extension nbgrader holds). This plugin takes the submission's time from nbgrader's gradebook (the
``timestamp.txt`` that ``nbgrader collect`` keeps) and computes the penalty from the grading settings alone
(``deadline.apply``: the same due date, grace, policy and extensions as ``sdpa-grade``), so that
``nbgrader export`` and ``sdpa-grade --csv`` give the same final scores. Set the assignment's nbgrader due
date no later than ``[deadline].due`` (docs/instructor.md, "Deadlines"), or nbgrader never asks:
``GradeNotebook`` warns, for every notebook it grades, where nbgrader's assignment has no due date or a later one
(``due_date_problem``).
"""

from __future__ import annotations

from datetime import timezone

from nbgrader.plugins import LateSubmissionPlugin
from traitlets import Unicode

from autograder.assignment.deadline import Deadline, apply, late_by
from autograder.config import ConfigError, load_settings


def due_date_problem(db_url: str, assignment: str, deadline: Deadline) -> str:
    """Why nbgrader will not charge the [deadline] policy for ``assignment`` ("" when it will, or there is no
    deadline): nbgrader asks the late plugin only for a submission later than the due date in its own gradebook."""
    if deadline.due is None:
        return ""
    from nbgrader.api import Gradebook, MissingEntry

    try:
        with Gradebook(db_url) as gradebook:
            duedate = gradebook.find_assignment(assignment).duedate  # naive UTC, as nbgrader stores it
    except (MissingEntry, OSError, ValueError) as error:
        return f"nbgrader's gradebook has no assignment {assignment} to read its due date from ({error})"
    due = deadline.due.astimezone(timezone.utc)
    command = f'nbgrader db assignment add {assignment} --duedate="{due:%Y-%m-%d %H:%M:%S} UTC"'
    if duedate is None:
        return (
            f"[deadline] is set (due {deadline.due.isoformat()}) but nbgrader's assignment {assignment} has no due"
            f" date: nbgrader never asks the late plugin, so no late penalty is charged on this path. Run: {command}"
        )
    if duedate.replace(tzinfo=timezone.utc) > due:
        return (
            f"nbgrader's due date for {assignment} ({duedate} UTC) is later than [deadline].due"
            f" ({deadline.due.isoformat()}): a submission late between the two is charged nothing. Run: {command}"
        )
    return ""


class CourseDeadline(LateSubmissionPlugin):
    """A notebook's late penalty from the course's [deadline] settings (see the module's docstring)."""

    settings_file = Unicode(
        "",
        help="Grading settings, as sdpa-grade --config FILE (empty: GradeNotebook.settings_file, SDPA_GRADE_CONFIG,"
        " then the defaults)",
    ).tag(config=True)

    def _settings(self):
        chosen = self.settings_file or getattr(self.config, "GradeNotebook", {}).get("settings_file", "") or None
        try:
            return load_settings(chosen)
        except ConfigError as error:
            raise RuntimeError(f"CourseDeadline: {error}") from None

    def late_submission_penalty(self, student_id: str, score: float, total_seconds_late: float) -> float | None:
        deadline = self._settings().deadline
        if deadline.due is None:
            return None
        preprocessor = self.parent  # nbgrader's AssignLatePenalties, its gradebook open while it asks
        submission = preprocessor.gradebook.find_submission(preprocessor.assignment_id, student_id)
        timestamp = submission.timestamp  # naive UTC, as nbgrader stores it
        submitted = timestamp.replace(tzinfo=timezone.utc) if timestamp is not None else None
        late = apply(deadline, student_id, float(score), submitted)
        if late.missing_time:
            self.log.warning("%s has no submission time: no late penalty applied (flag it for review)", student_id)
        when = f"{late_by(late.hours_late)} late" if late.hours_late else "on time"
        self.log.info("%s: %s, late penalty %s of %s", student_id, when, late.late_penalty, score)
        return late.late_penalty
