"""The nbgrader path: ``nbgrader autograde`` grades each notebook with sdpa-grade's own pipeline.

nbgrader runs a notebook's cells in a Jupyter kernel and scores a test cell by whether its
output holds an error. Here no kernel runs the student's cells: ``GradeNotebook`` takes the place
of nbgrader's ``Execute`` preprocessor (assignments/nbgrader_config.py), in nbgrader's own,
trusted process. It grades the notebook exactly as ``sdpa-grade`` grades one
(``autograder.grade.grade``: the student's cells run only in the worker's kernel sandbox, under
the same limits), checks the knowledge check's answers here (values read from the cells' source,
never run), and writes each hidden cell's verdict as its output: nothing for a pass, an error
output with the check's name and message for a failure, which nbgrader's ``SaveAutoGrades``
scores 0. The hidden cells hold no code and no answer; the student's process never sees this
package, the reference or the answers (docs/security.md, "The nbgrader path").
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import nbformat
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Bool, Unicode

from autograder.cell_feedback import note_output, verdict_outputs
from autograder.checks.catalogue import catalogue
from autograder.config import load_settings
from autograder.release.quiz import BY_NAME, verdict

NOT_RUN_HERE = (
    "Not run by the autograder: it runs the hidden checks below, on your code, in its own sandbox.\n"
    "Run these public tests in your notebook."
)


class GraderFailed(RuntimeError):
    """The grader's own failure on this notebook: nbgrader reports the notebook as failed, never as a 0."""


class GradeNotebook(NbGraderPreprocessor):
    """Fills in every test cell's output from a grading outside the student's reach (see the module's docstring)."""

    settings_file = Unicode(
        "", help="Grading settings, as sdpa-grade --config FILE (empty: SDPA_GRADE_CONFIG, then the defaults)"
    ).tag(config=True)
    require_sandbox = Bool(
        False,
        help="Refuse to grade (the notebook fails to autograde) where namespaces, Landlock or seccomp are missing",
    ).tag(config=True)

    def preprocess(self, nb: nbformat.NotebookNode, resources: dict) -> tuple[nbformat.NotebookNode, dict]:
        tests = [cell for cell in nb.cells if _is_test(cell)]
        checks = {entry.check for entry in catalogue()}
        for cell in tests:
            name = _check_of(cell)
            if name and name not in checks and name not in BY_NAME:
                raise GraderFailed(f"the hidden cell check_{name} names no check of this grader")
        verdicts = self.code_verdicts(nb)
        for cell in tests:
            name = _check_of(cell)
            if name in BY_NAME:
                message = verdict(name, _answer_cell(nb, name))
            elif name:
                if name not in verdicts:
                    raise GraderFailed(f"the grading has no result for the hidden cell check_{name}")
                message = verdicts[name]
            else:  # a public test cell (0 points): the student's code does not run outside the sandbox
                cell.outputs = [note_output(NOT_RUN_HERE)]
                continue
            cell.outputs = verdict_outputs(name, message) if message else []
        return nb, resources

    def code_verdicts(self, nb: nbformat.NotebookNode) -> dict:
        """check -> None when it earned all its points, else its scored check (worded by failure_output); graded as
        ``sdpa-grade NOTEBOOK`` grades."""
        from autograder.grade import grade  # torch and pytest: imported only when a notebook is graded

        settings = load_settings(self.settings_file or None)
        if self.require_sandbox:
            settings = settings.replace("limits", require_sandbox=True)
        with tempfile.TemporaryDirectory(prefix="sdpa-notebook-") as folder:
            path = Path(folder) / "submission.ipynb"
            nbformat.write(nb, path)
            grading = grade(path, settings)
        if grading.sandbox:  # which confinement held, as sdpa-grade prints it; a weaker one is a warning
            log = self.log.info if grading.sandbox.startswith("full sandbox") else self.log.warning
            log("sdpa-grade: %s", grading.sandbox)
        if grading.grader_error:
            raise GraderFailed(f"the grader failed on this notebook:\n{grading.grader_error}")
        return {item.outcome.check: None if item.score == item.max_score else item for item in grading.scored}


def _check_of(cell: nbformat.NotebookNode) -> str:
    """The check (or question) a hidden cell shows: its grade id without ``check_``; "" for another test cell."""
    grade_id = str(cell.metadata.get("nbgrader", {}).get("grade_id", ""))
    return grade_id.removeprefix("check_") if grade_id.startswith("check_") else ""


def _is_test(cell: nbformat.NotebookNode) -> bool:
    meta = cell.metadata.get("nbgrader", {})
    return cell.cell_type == "code" and bool(meta.get("grade")) and not meta.get("solution")


def _answer_cell(nb: nbformat.NotebookNode, name: str) -> str:
    """The source of the solution cell where the student answers question ``name`` ("" where there is none)."""
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("solution") and meta.get("grade_id") == name:
            return cell.source
    return ""
