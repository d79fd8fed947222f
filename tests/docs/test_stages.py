"""The grading's stages in one place (docs/architecture.md, "The pipeline"): ``grade.STAGES`` is the one list,
``grade.grade`` runs every stage of it, and every path (``sdpa-grade grade``, the batch, nbgrader's autograde and
Gradescope's run_autograder, which runs ``sdpa-grade grade``) grades one submission through ``grade.grade`` and never
runs a stage of its own."""

from __future__ import annotations

import ast
from datetime import datetime, timedelta, timezone

from autograder import grade
from autograder.checks import quiz
from autograder.config import load_settings
from autograder.read.handed_in import TimeFrom
from autograder.release.gradescope import RUN
from tests.helpers import ROOT

PACKAGE = ROOT / "autograder"
# each path, and the module in which it grades one submission
PATHS = {
    "sdpa-grade grade": "course/grade_verb.py",
    "sdpa-grade batch": "course/pool.py",
    "nbgrader autograde": "nbgrader_path/autograde.py",
}
STAGE_NAMES = [stage.__name__ for stage in grade.STAGES]


def _names_of_grade_module(tree: ast.Module) -> tuple[dict[str, str], set[str]]:
    """What a module binds from autograder.grade: the stages and ``grade`` it imports from it (name -> its local
    name), and its local names for the module itself."""
    imported: dict[str, str] = {}
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "autograder.grade":
            wanted = STAGE_NAMES + ["grade"]
            imported |= {alias.name: alias.asname or alias.name for alias in node.names if alias.name in wanted}
        elif isinstance(node, ast.ImportFrom) and node.module == "autograder":
            modules |= {alias.asname or alias.name for alias in node.names if alias.name == "grade"}
        elif isinstance(node, ast.Import):
            modules |= {alias.asname for alias in node.names if alias.name == "autograder.grade" and alias.asname}
    return imported, modules


def test_every_path_grades_through_the_one_pipeline():
    """Each path's module calls grade.grade; no module but grade.py imports or calls a stage on its own (a path that
    ran some stages itself could skip one); Gradescope's run_autograder runs the grade verb."""
    for path, module in PATHS.items():
        tree = ast.parse((PACKAGE / module).read_text())
        imported, _ = _names_of_grade_module(tree)
        calls = {
            node.func.id for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        }
        assert imported.get("grade") in calls, f"{path} ({module}) does not grade through grade.grade"
    for file in sorted(PACKAGE.rglob("*.py")):
        if file == PACKAGE / "grade.py":
            continue
        tree = ast.parse(file.read_text())
        imported, modules = _names_of_grade_module(tree)
        stages = sorted(set(imported) - {"grade"})
        stages += sorted(
            node.attr
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules
            and node.attr in STAGE_NAMES
        )  # fmt: skip
        assert not stages, f"{file.relative_to(ROOT)} runs the stage(s) {stages} outside grade.grade"
    assert '/sdpa-grade" grade "$ROOT/submission"' in RUN


def test_grade_runs_every_stage_of_the_list(tmp_path):
    """One grading (a missing file, under a deadline, handed in a day late) bears the mark of each stage of
    grade.STAGES, and records the list: a stage skipped, or added without its mark here, fails."""
    due = datetime(2026, 12, 1, tzinfo=timezone.utc)
    (tmp_path / "course.toml").write_text(f'[deadline]\ndue = "{due.isoformat()}"\npolicy = "per_day"\npercent = 10\n')
    settings = load_settings(tmp_path / "course.toml", environ={})
    late = TimeFrom("alice", due + timedelta(days=1))
    grading = grade.grade(tmp_path / "alice" / "attention.py", settings, time=late)
    marks = {
        "read": grading.handed is not None and grading.missing and grading.when is not None,
        "run_checks": bool(grading.outcomes),
        "score": len(grading.scored) == len(grading.outcomes),
        "knowledge_check": len(grading.questions) == len(quiz.QUESTIONS),
        "build_result": bool(grading.result.get("tests")),
        "decide_late": "late" in grading.result.get("extra_data", {}),
    }
    assert list(marks) == STAGE_NAMES, "a stage of grade.STAGES has no mark in this test"
    assert [name for name, ran in marks.items() if not ran] == []
    assert grading.result["extra_data"]["provenance"]["stages"] == STAGE_NAMES
    assert not grading.grader_error
