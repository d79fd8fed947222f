"""One total per submission, whichever path grades it: nbgrader (autograde + export, with the late plugin),
`sdpa-grade batch`, `sdpa-grade` alone and the Gradescope bundle give a notebook the same raw score, late penalty
and final score; the knowledge check counts on every path."""

from __future__ import annotations

import csv
import json
import os
import shutil
from datetime import datetime, timedelta, timezone

import nbformat
import pytest

from autograder.checks.quiz import POINTS, QUESTIONS
from autograder.config import load_settings
from tests.helpers import BIN, ROOT, answered, clean_env, nbgrader, run

SOURCE = ROOT / "assignments" / "source" / "sdpa" / "sdpa.ipynb"


def _notebook(tmp_path, answers: dict[str, str]):
    """The source notebook (every answer right) with ``answers`` written into their answer cells."""
    notebook = nbformat.read(SOURCE, as_version=4)
    for cell in notebook.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            cell.source = answers[grade_id]
    path = tmp_path / "sdpa.ipynb"
    nbformat.write(notebook, path)
    return path


def test_sdpa_grade_scores_a_notebooks_knowledge_check(tmp_path):
    """A notebook's results hold one test per question, scored by quiz.verdict as nbgrader scores its cells: POINTS
    for a right answer, 0 and what to reread for a wrong one; the result's score and maximum count them (built once,
    by build_result, after the knowledge check's stage). An attention.py has them too, each 0 of POINTS."""
    from autograder.grade import Grading, build_result, knowledge_check
    from autograder.read.handed_in import take

    settings = load_settings(environ={})
    path = _notebook(tmp_path, {"q_variance": "q_variance = 8"})
    grading = knowledge_check(Grading(path, settings, handed=take(path, settings.limits)))
    result = build_result(grading).result
    assert [test["extra_data"]["check"] for test in result["tests"]] == [question.name for question in QUESTIONS]
    right = len(QUESTIONS) - 1
    assert (result["score"], result["max_score"]) == (right * POINTS, len(QUESTIONS) * POINTS)
    wrong = next(test for test in result["tests"] if test["extra_data"]["check"] == "q_variance")
    assert (wrong["score"], wrong["status"]) == (0.0, "failed") and "reread 'Why scale?'" in wrong["output"]
    assert "64" not in wrong["output"]  # never the answer
    script = tmp_path / "attention.py"
    script.write_text("x = 1\n")
    grading = knowledge_check(Grading(script, settings, handed=take(script, settings.limits)))
    assert [(test["score"], test["max_score"]) for test in grading.questions] == [(0.0, POINTS)] * len(QUESTIONS)
    json.dumps(result)  # results.json as written


# ---- the four paths, on real commands: a late, an extended and an on-time student ----

DUE = datetime(2026, 12, 1, 23, 59, tzinfo=timezone(timedelta(hours=-5)))
SETTINGS = (
    f'[deadline]\ndue = "{DUE.isoformat()}"\npolicy = "per_day"\npercent = 10\n'
    f'[deadline.extensions]\nextended = "{(DUE + timedelta(days=3)).isoformat()}"\n'
)
# student -> (handed in, the share of the raw score kept, their answers); nbgrader's due date and every extension
# are the settings': on Gradescope, the extension is granted there (the student's own due date)
STUDENTS = {
    "late": (DUE + timedelta(days=1, hours=23), 0.8, {"q_variance": "q_variance = 8"}),  # 2 days begun: 20% off
    "extended": (DUE + timedelta(days=1, hours=23), 1.0, {}),  # the same, inside a 3 days' extension
    "ontime": (DUE - timedelta(minutes=5), 1.0, {}),
}


def _course(base):
    """An nbgrader course with its assignment generated, nbgrader's due date set to the settings', and each
    student's notebook collected into submitted/ with nbgrader's timestamp.txt."""
    course = base / "course"
    shutil.copytree(
        ROOT / "assignments",
        course,
        ignore=shutil.ignore_patterns("release", "submitted", "autograded", "feedback", "exchange", "gradebook.db"),
    )
    (course / "course.toml").write_text(SETTINGS)
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    nbgrader("generate_assignment", "sdpa", "--force", cwd=course, env=env)
    due = DUE.astimezone(timezone.utc)
    nbgrader("db", "assignment", "add", "sdpa", f"--duedate={due:%Y-%m-%d %H:%M:%S} UTC", cwd=course, env=env)
    release = nbformat.read(course / "release" / "sdpa" / "sdpa.ipynb", as_version=4)
    source = nbformat.read(SOURCE, as_version=4)
    for name, (handed_in, _, answers) in STUDENTS.items():
        folder = course / "submitted" / name / "sdpa"
        folder.mkdir(parents=True)
        nbformat.write(answered(release, source, answers), folder / "sdpa.ipynb")
        (folder / "timestamp.txt").write_text(f"{handed_in.astimezone(timezone.utc):%Y-%m-%d %H:%M:%S.%f} UTC")
    return course, env


def _csv(path) -> dict[str, dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return {row.get("student_id") or row["student"]: row for row in csv.DictReader(handle)}


def _gradescope(course, base, set_up) -> dict[str, tuple[float, float]]:
    """Each student's notebook uploaded to the bundle built with the course's settings, Gradescope's metadata giving
    their time, the assignment's due date (the settings') and, for the extended student, their own due date."""
    bundle = base / "autograder.zip"
    built = run([str(BIN / "sdpa-build"), "--gradescope", str(bundle), "--config", str(course / "course.toml")],
                cwd=ROOT, timeout=120)  # fmt: skip
    assert built.returncode == 0, built.stderr
    root, done = set_up(bundle, base / "gradescope")  # its setup.sh run once in the session
    assert done.returncode == 0, done.stdout + done.stderr
    scores = {}
    for name, (handed_in, _, _) in STUDENTS.items():
        user = {"email": f"{name}@example.com", "id": len(scores), "name": name}
        if name == "extended":
            user["assignment"] = {"due_date": (DUE + timedelta(days=3)).isoformat()}
        metadata = {"created_at": handed_in.isoformat(), "users": [user],
                    "assignment": {"due_date": DUE.isoformat(), "late_due_date": None, "title": "SDPA"}}  # fmt: skip
        for folder in ("submission", "results"):
            shutil.rmtree(root / folder, ignore_errors=True)
        (root / "submission").mkdir()
        shutil.copy(course / "submitted" / name / "sdpa" / "sdpa.ipynb", root / "submission" / "sdpa.ipynb")
        (root / "submission_metadata.json").write_text(json.dumps(metadata))
        graded = run([shutil.which("bash"), str(root / "source" / "run_autograder")], cwd=root / "source",
                     env=clean_env(AUTOGRADER_ROOT=str(root)), timeout=120)  # fmt: skip
        assert graded.returncode == 0, graded.stdout + graded.stderr
        result = json.loads((root / "results" / "results.json").read_text())
        scores[name] = (result["extra_data"]["late"]["raw_score"], result["score"])
    return scores


@pytest.fixture(scope="module")
def collected(tmp_path_factory):
    """(course, environment, the scores each path must give): the course of _course, made once for the four paths;
    each student's (raw score, final score), the raw score the checks' and the knowledge check's points."""
    course, env = _course(tmp_path_factory.mktemp("one-total"))
    full = sum(v for k, v in load_settings(course / "course.toml", environ={}).points.items() if k != "timing_gpu")
    full += len(QUESTIONS) * POINTS  # (no GPU here: timing_gpu is not run)
    expected = {}
    for name, (_, kept, answers) in STUDENTS.items():
        raw = full - len(answers) * POINTS
        expected[name] = (raw, pytest.approx(raw * kept))
    return course, env, expected


# Each path gives the same raw score (the checks and the knowledge check) and the same final score for a student 2
# days late, one 2 days late inside a 3 days' extension, and one on time: one test per path, on one course.


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_nbgrader_gives_each_student_the_one_total(collected, tmp_path):
    """nbgrader: autograde with the late plugin and the course's settings, then export."""
    course, env, expected = collected
    settings = course / "course.toml"
    nbgrader("autograde", "sdpa", "--force", f"--GradeNotebook.settings_file={settings}", cwd=course, env=env)
    nbgrader("export", f"--to={tmp_path / 'nbgrader.csv'}", cwd=course, env=env)
    exported = {
        name: (float(row["raw_score"]), float(row["score"])) for name, row in _csv(tmp_path / "nbgrader.csv").items()
    }
    assert exported == expected


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_batch_gives_each_student_the_one_total(collected, tmp_path):
    """sdpa-grade batch on nbgrader's submitted/ folder, its CSV."""
    course, _, expected = collected
    batch = run([str(BIN / "sdpa-grade"), "batch", str(course / "submitted"), "--config", str(course / "course.toml"),
                 "--json-dir", str(tmp_path / "grades"), "--csv", str(tmp_path / "batch.csv")],
                timeout=120)  # fmt: skip
    assert batch.returncode == 0, batch.stderr
    batched = {
        name: (float(row["raw_score"]), float(row["score"])) for name, row in _csv(tmp_path / "batch.csv").items()
    }
    assert batched == expected


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_grading_alone_gives_each_student_the_one_total(collected, tmp_path):
    """sdpa-grade grade on each collected notebook (its time from nbgrader's timestamp.txt beside it)."""
    course, _, expected = collected
    alone = {}
    for name in STUDENTS:
        out = tmp_path / "alone" / f"{name}.json"
        graded = run([str(BIN / "sdpa-grade"), "grade", str(course / "submitted" / name / "sdpa" / "sdpa.ipynb"),
                      "--config", str(course / "course.toml"), "--json", str(out)], timeout=120)  # fmt: skip
        assert graded.returncode == 0, graded.stderr
        result = json.loads(out.read_text())
        alone[name] = (result["extra_data"]["late"]["raw_score"], result["score"])
    assert alone == expected


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_the_gradescope_bundle_gives_each_student_the_one_total(collected, tmp_path, gradescope_set_up):
    """The Gradescope bundle built with the course's settings, each notebook uploaded with Gradescope's metadata."""
    course, _, expected = collected
    assert _gradescope(course, tmp_path, gradescope_set_up) == expected
