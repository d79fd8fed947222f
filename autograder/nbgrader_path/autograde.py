"""The nbgrader path: ``nbgrader autograde`` grades each notebook with sdpa-grade's own pipeline.

nbgrader runs a notebook's cells in a Jupyter kernel and scores a test cell by whether its
output holds an error. Here no kernel runs the student's cells: ``GradeNotebook`` takes the place
of nbgrader's ``Execute`` preprocessor (assignments/nbgrader_config.py), in nbgrader's own,
trusted process. It grades the notebook exactly as ``sdpa-grade`` grades one
(``autograder.grade.grade``: the student's cells run only in the worker's kernel sandbox, under
the same limits), checks the knowledge check's answers here (values read from the cells' source,
never run), and writes each hidden cell's verdict as its output: nothing for a pass, an error
output with the check's name and message for a failure, which nbgrader's ``SaveAutoGrades``
scores 0. One worker zygote serves every notebook of an ``nbgrader autograde`` run (``shared_zygote``), as one serves
a batch: torch is imported for the student's sandboxes once per run, not once per notebook. The hidden cells hold no
code and no answer; the student's process never sees this
package, the reference or the answers (docs/security.md, "The nbgrader path").
"""

from __future__ import annotations

import atexit
import gc
import tempfile
from collections.abc import Mapping
from pathlib import Path

import nbformat
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Bool, Unicode

from autograder.assignment.catalogue import catalogue
from autograder.checks.quiz import BY_NAME, COPY_OF, Answer, answer_cells, verdict
from autograder.config import REQUIRE_SANDBOX, ConfigError, Settings, load_settings
from autograder.nbgrader_path.cell_feedback import note_output, verdict_outputs
from autograder.read.bounded import cell_problem
from autograder.status import passed

NOT_RUN_HERE = (
    "Not run by the autograder: it runs the hidden checks below, on your code, in its own sandbox.\n"
    "Run these public tests in your notebook."
)


_ZYGOTE = []  # the run's worker zygote, once started (one at most)


def shared_zygote(log, settings: Settings):
    """The worker zygote this nbgrader run grades with: started at the first notebook (it holds no settings, seed or
    reference: a fresh process that imports torch and forks each sandbox), again if it died, closed at exit.

    While it imports torch, this process imports what every grading would (``grade.warm_up``, as a batch does before
    it forks), then moves what it holds out of the cycle collector's reach (``freeze_heap``)."""
    from autograder.grade import warm_up
    from autograder.sandbox.zygote import Zygote

    if _ZYGOTE and _ZYGOTE[0].process.poll() is not None:
        _ZYGOTE.pop().close()
    if not _ZYGOTE:
        zygote = Zygote()
        atexit.register(zygote.close)
        _ZYGOTE.append(zygote)
        log.info("sdpa-grade: the worker zygote started (torch is imported once for every notebook of this run)")
        warm_up(settings)
        freeze_heap()
    return _ZYGOTE[0]


def freeze_heap() -> None:
    """Collect this process's garbage once, then leave every object it holds now out of the cycle collector's walks
    (``gc.freeze``): nbgrader, its gradebook's SQLAlchemy, nbconvert, torch and pytest, about 380,000 objects by the
    first notebook. Each grading's collections then walk that grading's own objects alone (a grading in nbgrader's
    process otherwise walks them all, where a batch's child walks its fork's), and the exit's collections skip them
    (the batch skips the exit's teardown). A frozen object is still freed when its last reference goes; one in a
    cycle that becomes garbage stays until the exit. What each notebook makes later is collected as before."""
    gc.collect()
    gc.freeze()


class GraderFailed(RuntimeError):
    """The grader's own failure on this notebook: nbgrader reports the notebook as failed, never as a 0."""


class NotebookRefused(RuntimeError):
    """A student's notebook nbgrader cannot grade (a cell of the wrong shape, nbgrader metadata of another schema):
    a plain error, so nbgrader reports it for that student and goes on to the next (its schema errors stop the
    whole class)."""


class DeduplicateIds(NbGraderPreprocessor):
    """In place of nbgrader's DeduplicateIds, the first of autograde's sanitizing steps: one notebook never stops
    the class (assignments/nbgrader_config.py).

    Jupyter's copy and paste copies a cell's nbgrader grade id. nbgrader keeps the last cell of each id and
    empties the others' nbgrader metadata, which its own schema check then refuses as outdated, and that error
    stops ``nbgrader autograde`` for every student after this one. Here the last cell of an id keeps it (as in
    nbgrader), every earlier copy loses its nbgrader metadata entirely (its code stays, graded as the student's),
    and each is named in the log. A cell of the wrong shape, or nbgrader metadata of a schema this nbgrader does
    not read, refuses this notebook alone (``NotebookRefused``), before any other step reads it.
    """

    def preprocess(self, nb: nbformat.NotebookNode, resources: dict) -> tuple[nbformat.NotebookNode, dict]:
        from nbgrader.nbgraderformat import SCHEMA_VERSION

        student = resources.get("nbgrader", {}).get("student", "?")
        cells = nb.get("cells")
        if not isinstance(cells, list):
            raise NotebookRefused(f"the notebook of {student!r} has no list of cells")
        for number, cell in enumerate(cells, 1):
            problem = cell_problem(cell)
            meta = {} if problem else cell.get("metadata", {})
            if meta.get("nbgrader") == {}:
                del meta["nbgrader"]  # says nothing (nbgrader's own schema check would refuse it as outdated)
            elif "nbgrader" in meta and meta["nbgrader"].get("schema_version") != SCHEMA_VERSION:
                problem = f"has nbgrader metadata of schema {meta['nbgrader'].get('schema_version')!r}"
            if problem:
                raise NotebookRefused(f"the notebook of {student!r} is refused: cell {number} {problem}")
        seen: set[str] = set()
        for number in range(len(cells), 0, -1):
            meta = cells[number - 1].get("metadata", {})
            grade_id = meta.get("nbgrader", {}).get("grade_id")
            if not isinstance(grade_id, str) or not grade_id:
                continue
            if grade_id in seen:
                self.log.warning(
                    "%s: the notebook holds the grade id %r twice (a pasted copy of a cell?): cell %d is graded as"
                    " the student's code, without it",
                    student,
                    grade_id,
                    number,
                )
                if meta["nbgrader"].get("solution"):  # the answer cells' rule counts it as a copy (quiz.answer_cells)
                    meta["sdpa_grade"] = {COPY_OF: grade_id}
                del meta["nbgrader"]
            seen.add(grade_id)
        return nb, resources


class GradeNotebook(NbGraderPreprocessor):
    """Fills in every test cell's output from a grading outside the student's reach (see the module's docstring)."""

    settings_file = Unicode(
        "",
        help="Grading settings, the file sdpa-grade --config FILE takes (relative to the folder nbgrader runs in;"
        " empty: SDPA_GRADE_CONFIG, then the defaults). The notebook's hidden cells must be worth the points it gives",
    ).tag(config=True)
    require_sandbox = Bool(
        False,
        help=f"{REQUIRE_SANDBOX} (the notebook fails to autograde)",
    ).tag(config=True)

    def preprocess(self, nb: nbformat.NotebookNode, resources: dict) -> tuple[nbformat.NotebookNode, dict]:
        answer_chars = load_settings(self.settings_file or None).limits.answer_chars
        tests = [cell for cell in nb.cells if _is_test(cell)]
        checks = {entry.check for entry in catalogue()}
        for cell in tests:
            name = _check_of(cell)
            if name and name not in checks and name not in BY_NAME:
                raise GraderFailed(f"the hidden cell check_{name} names no check of this grader")
        settings = self.settings()
        _parts_problem(tests, settings)
        nbgrader = resources.get("nbgrader") or {}
        if settings.deadline.due is not None and nbgrader.get("db_url") and nbgrader.get("assignment"):
            from autograder.nbgrader_path.late_plugin import due_date_problem

            problem = due_date_problem(nbgrader["db_url"], nbgrader["assignment"], settings.deadline)
            if problem:
                self.log.warning("sdpa-grade: %s", problem)
        mismatched = points_mismatch(tests, settings.points)
        if mismatched:  # nbgrader scores a cell by its own points (the gradebook's): they must be the settings'
            raise GraderFailed(
                f"the notebook's points are not those of the grading settings ({settings.source}): "
                + "; ".join(
                    f"check_{name} is worth {cell:g} in the notebook, {given:g} in [points] {name}"
                    for name, cell, given in mismatched
                )
                + ". Give the source notebook's hidden cells the settings' points and run nbgrader generate_assignment"
                " --force, or change the settings (docs/instructor.md)"
            )
        missing = _missing_checks(tests, settings)
        if missing:  # nbgrader would score each 0 without a word, while sdpa-grade grades them: the totals would differ
            raise GraderFailed(
                "the notebook has no cell for " + ", ".join(f"check_{name}" for name in missing) + " (the student"
                " deleted it): set c.OverwriteCells.add_missing_cells = True in nbgrader_config.py, as the course's"
                " does, so that nbgrader puts it back from the source notebook before grading (docs/instructor.md)"
            )
        verdicts = self.code_verdicts(nb, settings)
        answers = answer_cells(nb.cells, answer_chars)  # found as sdpa-grade finds them (checks/quiz.py)
        for cell in tests:
            name = _check_of(cell)
            if name in BY_NAME:
                answer = answers.get(name, Answer())
                message = answer.said(verdict(name, answer.source, answer_chars, settings.lesson))
                if answer.note and message == answer.note:  # right, from a cell found otherwise: said, full points
                    cell.outputs = [note_output(f"{name}: {message}")]
                    continue
            elif name:
                if name not in verdicts:
                    raise GraderFailed(f"the grading has no result for the hidden cell check_{name}")
                message = verdicts[name]
            else:  # a public test cell (0 points): the student's code does not run outside the sandbox
                cell.outputs = [note_output(NOT_RUN_HERE)]
                continue
            cell.outputs = verdict_outputs(name, message) if message else []
        return nb, resources

    def settings(self) -> Settings:
        """The grading settings: ``settings_file`` (as ``sdpa-grade --config``), else SDPA_GRADE_CONFIG, else the
        defaults; a bad file is the grader's failure, naming it."""
        try:
            settings = load_settings(self.settings_file or None)
        except ConfigError as error:
            raise GraderFailed(f"c.GradeNotebook.settings_file: {error}") from None
        return settings.replace("limits", require_sandbox=True) if self.require_sandbox else settings

    def code_verdicts(self, nb: nbformat.NotebookNode, settings: Settings) -> dict:
        """check -> None when it earned all its points, else its scored check (worded by verdict_outputs; one that
        keeps its points by error carried forward is one too, so that the student reads why); graded as
        ``sdpa-grade --config FILE NOTEBOOK`` grades."""
        from autograder.grade import grade  # torch and pytest: imported only when a notebook is graded

        with tempfile.TemporaryDirectory(prefix="sdpa-notebook-") as folder:
            path = Path(folder) / "submission.ipynb"
            nbformat.write(nb, path)
            grading = grade(path, settings, zygote=shared_zygote(self.log, settings))
        if grading.sandbox:  # which confinement held, as sdpa-grade prints it; a weaker one is a warning
            log = self.log.info if grading.sandbox.startswith("full sandbox") else self.log.warning
            log("sdpa-grade: %s", grading.sandbox)
        if grading.grader_error:
            raise GraderFailed(f"the grader failed on this notebook:\n{grading.grader_error}")
        return {item.outcome.check: None if passed(item) and not item.carried else item for item in grading.scored}


def _parts_problem(tests: list[nbformat.NotebookNode], settings: Settings) -> None:
    """Refuse a notebook built with other optional parts ([parts]) than the settings grade: nbgrader would total cells
    the grading does not run, or the grading would give points no cell shows (the two totals would disagree)."""
    import dataclasses

    cells = {_check_of(cell) for cell in tests}
    optional = {field.name for field in dataclasses.fields(settings.parts)}
    for part in sorted(optional):
        functions = settings.parts.functions(part)
        own = {entry.check for entry in catalogue() if entry.function in functions}
        built, graded = bool(own & cells), not set(functions) & settings.parts.off()
        if built != graded:
            raise GraderFailed(
                f"the notebook was built {'with' if built else 'without'} the optional part {part}, and the"
                f" grading settings ({settings.source}) turn it {'off' if built else 'on'} ([parts] {part}):"
                " grade with the settings file the notebook was built with (sdpa-build --config FILE, then nbgrader"
                " generate_assignment --force), docs/instructor.md"
            )


def _missing_checks(tests: list[nbformat.NotebookNode], settings: Settings) -> list[str]:
    """The checks and questions the source notebook gives a cell (release/notebook.py: every check of the parts the
    settings grade, but those graded outside the notebook, and every question) that ``tests`` holds no cell of."""
    from autograder.release.notebook import NOT_IN_NOTEBOOK

    off = settings.parts.off()
    expected = [e.check for e in catalogue() if e.function not in off and e.check not in NOT_IN_NOTEBOOK]
    present = {_check_of(cell) for cell in tests}
    return [name for name in [*expected, *BY_NAME] if name not in present]


def points_mismatch(tests: list[nbformat.NotebookNode], points: Mapping[str, float]) -> list[tuple[str, float, float]]:
    """(check, the cell's points, the settings') for each hidden cell of a check whose points the settings set
    otherwise."""
    found = []
    for cell in tests:
        name = _check_of(cell)
        if name in points:
            worth = cell.metadata.get("nbgrader", {}).get("points", 0)
            if float(worth) != float(points[name]):
                found.append((name, float(worth), float(points[name])))
    return found


def _check_of(cell: nbformat.NotebookNode) -> str:
    """The check (or question) a hidden cell shows: its grade id without ``check_``; "" for another test cell."""
    grade_id = str(cell.metadata.get("nbgrader", {}).get("grade_id", ""))
    return grade_id.removeprefix("check_") if grade_id.startswith("check_") else ""


def _is_test(cell: nbformat.NotebookNode) -> bool:
    meta = cell.metadata.get("nbgrader", {})
    return cell.cell_type == "code" and bool(meta.get("grade")) and not meta.get("solution")
