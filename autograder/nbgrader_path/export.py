"""``nbgrader export`` of the grade of record (assignments/nbgrader_config.py: ``c.ExportApp.plugin_class``).

nbgrader's own export writes what its gradebook holds: autograde's scores and the late plugin's penalties. The
instructor's decisions (hold, clear, override, extend, undo: docs/instructor.md, "The grade of record") are kept in
the results folder that ``sdpa-grade batch`` writes for the collected notebooks (``sdpa-grade batch submitted``:
``submitted-grades`` beside it), beside the late decision the batch made once; nbgrader's gradebook has no place for
a hold or a reason. ``RecordExport`` writes nbgrader's CSV (its columns, one row per student of the gradebook) for
the assignment the record is of with the record's numbers: the raw score, the late penalty, the final score and the
maximum, and a ``status`` column (``graded``, ``held``, ``missing`` ...). It decides nothing: a held student's row
has no score, a student with no result is named and has none, results graded under other checks or settings are
refused whole (as ``sdpa-grade summary`` refuses them). Where there is no record yet (no results folder), nbgrader's
gradebook is exported as nbgrader exports it, with a warning that says so.
"""

from __future__ import annotations

import csv
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.plugins import CsvExportPlugin
from traitlets import Unicode

from autograder.config import ConfigError, load_settings
from autograder.render.inert import csv_cell
from autograder.status import HELD, MISSING

VERB = "nbgrader export"
COLUMNS = ("assignment", "duedate", "timestamp", "student_id", "last_name", "first_name", "email", "raw_score",
           "late_submission_penalty", "score", "max_score", "status")  # fmt: skip  # nbgrader's, then the status


class NoRecord(RuntimeError):
    """The record cannot be exported (results graded under other settings, a decisions file that is not one): nbgrader
    export fails, naming why, and writes nothing."""


class RecordExport(CsvExportPlugin):
    """nbgrader's CSV, holding the grade of record (see the module's docstring)."""

    class_folder = Unicode(
        "submitted",
        help="The class folder sdpa-grade batch graded (nbgrader's collected submitted/), relative to the course root",
    ).tag(config=True)
    results = Unicode(
        "",
        help="Its results folder, the batch's --json-dir, relative to the course root (empty: the batch's default,"
        " <class_folder>-grades beside the class folder)",
    ).tag(config=True)
    record_of = Unicode("sdpa", help="The nbgrader assignment whose grades the record holds").tag(config=True)
    settings_file = Unicode(
        "",
        help="Grading settings, as sdpa-grade --config FILE (empty: GradeNotebook.settings_file, SDPA_GRADE_CONFIG,"
        " then the defaults): its limits read the class folder, as the batch reads it",
    ).tag(config=True)

    def export(self, gradebook: Gradebook) -> None:
        from autograder.course.class_folder import results_folder

        root = Path(getattr(getattr(self.parent, "coursedir", None), "root", "") or ".")
        folder = root / self.class_folder
        out = results_folder(folder, root / self.results if self.results else None)
        if not out.is_dir():
            self.log.warning(
                "sdpa-grade: no grade of record in %s (sdpa-grade batch %s writes it): nbgrader's gradebook is exported"
                " as it is, without the instructor's decisions (docs/instructor.md, 'The grade of record')",
                out,
                folder,
            )
            super().export(gradebook)
            return
        lines = self._record(folder, out)
        unknown = [student.id for student in gradebook.students if student.id not in lines]
        if unknown:  # in nbgrader's gradebook, not in the class folder: nothing handed in that the record holds
            self.log.warning("sdpa-grade: no grade of record, no score exported: %s", ", ".join(unknown))
        lines.update(dict.fromkeys(unknown, {"status": MISSING}))
        rows = [self._row(gradebook, student, line) for student, line in lines.items()]
        if self.assignment and self.record_of not in [str(name) for name in self.assignment]:
            rows = []  # --assignment names others: the record holds none of them
        if self.student:
            rows = [row for row in rows if row["student_id"] in [str(name) for name in self.student]]
        dest = self.to or "grades.csv"
        self.log.info("Exporting the grade of record (%s) of %s to %s", out, self.record_of, dest)
        with open(dest, "w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, COLUMNS)
            writer.writeheader()
            writer.writerows(rows)

    def _record(self, folder: Path, out: Path) -> dict[str, dict]:
        """Student -> their line of the record: the fields the CSV takes from it, as every other export reads them
        (course/grades_csv.final_scores; the record settled by the decisions first, as push settles it)."""
        from autograder.course import of_record
        from autograder.course.class_folder import Refused, open_class
        from autograder.course.class_results import class_results
        from autograder.course.grades_csv import final_scores, held_line
        from autograder.course.summary import read_results
        from autograder.record import Result

        try:
            the_class = open_class(folder, out, self._settings())
        except Refused as error:
            raise NoRecord(f"{VERB}: {error}; nothing written") from None
        of_record.tell(of_record.settle_all(the_class.targets, the_class.known), VERB)
        results, missing = read_results(the_class, VERB)
        if results is None:
            raise NoRecord(f"{VERB}: the grade of record in {out} cannot be exported whole; nothing written")
        stats = class_results(results)
        finals = final_scores(stats)
        lines = {}
        for student in stats.students:
            line = {"status": MISSING}
            if student.result is not None:
                record = Result.of(student.result)
                late = record.late or {}
                line = {"status": HELD if student.held else student.status, "raw_score": record.raw_score,
                        "late_submission_penalty": late.get("late_penalty", 0.0),
                        "timestamp": late.get("submitted_at") or ""}  # fmt: skip
                if student.name in finals:
                    line["score"], line["max_score"] = finals[student.name]
            lines[student.name] = line
        held = [s.name for s in stats.present if s.held]
        if held:
            self.log.warning("sdpa-grade: %s", held_line(held, "the export").removeprefix("note: "))
        if missing:
            self.log.warning("sdpa-grade: no grade of record, no score exported: %s", ", ".join(missing))
        return lines

    def _row(self, gradebook: Gradebook, name: str, line: dict) -> dict:
        """One row of nbgrader's CSV: the gradebook's student and due date, the record's numbers."""
        row = dict.fromkeys(COLUMNS, "")
        row.update(assignment=self.record_of, student_id=name)
        try:
            student = gradebook.find_student(name)
            row.update(last_name=student.last_name or "", first_name=student.first_name or "",
                       email=student.email or "")  # fmt: skip
        except MissingEntry:
            self.log.warning("sdpa-grade: %s has a grade of record but is not in nbgrader's gradebook", name)
        try:
            row["duedate"] = gradebook.find_assignment(self.record_of).duedate or ""
            theirs = gradebook.find_submission(self.record_of, name).score
        except MissingEntry:
            theirs = None
        ours = line.get("raw_score")
        if theirs is not None and ours is not None and abs(float(theirs) - float(ours)) > 1e-6:
            self.log.warning(  # a score changed in formgrader, or a notebook graded again on one side only
                "sdpa-grade: %s: nbgrader's gradebook holds %g, the grade of record %g (raw): the record's is exported;"
                " make decisions with sdpa-grade's verbs (override), not in formgrader",
                name,
                float(theirs),
                float(ours),
            )
        row.update({key: "" if value is None else value for key, value in line.items()})
        return {key: csv_cell(value) if isinstance(value, str) else value for key, value in row.items()}  # no formula

    def _settings(self):
        chosen = self.settings_file or getattr(self.config, "GradeNotebook", {}).get("settings_file", "") or None
        try:
            return load_settings(chosen)
        except ConfigError as error:
            raise NoRecord(f"RecordExport: {error}") from None
