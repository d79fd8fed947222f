"""The instructor's whole nbgrader workflow, on real nbgrader, with four students (one attacks the grader)."""

from __future__ import annotations

import csv
import html
import json
import os
import shutil

import nbformat
import pytest

from autograder.checks.quiz import POINTS, QUESTIONS
from autograder.config import load_settings
from autograder.release.template import solution_lines
from tests.helpers import BIN, REFERENCE, ROOT, SUBMISSIONS, answered, nbgrader, points, run, total

pytestmark = pytest.mark.slow
COURSE = ["--course", "sdpa-course"]
LOOP = """def dot_product_variance(d_k, num_samples=10000, generator=None):
    while True:
        pass
"""
ATTACKS = (
    "by_path",
    "resources",
    "getsource",
    "sys_modules",
    "gc_objects",
    "loader_get_data",
    "environ",
    "other_student",
    "write_outside",
    "monkeypatch",
)  # the attacks of tests/submissions/notebook/steal_everything.py
SECRET = "do-not-show-9f1c2e"  # in nbgrader's environment: no student's code may read it
# every check of a knowledge-check question answered wrongly (True for False, the example's placeholder otherwise)
WRONG_ANSWERS = {q.name: f"{q.name} = {not q.answer if isinstance(q.answer, bool) else q.example}" for q in QUESTIONS}


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """Generate, release, fetch, submit (four students), collect, autograde, give feedback, export."""
    base = tmp_path_factory.mktemp("nbgrader")
    course = base / "course"
    shutil.copytree(
        ROOT / "assignments",
        course,
        ignore=shutil.ignore_patterns("release", "submitted", "autograded", "feedback", "exchange", "gradebook.db"),
    )
    exchange = course / "exchange"
    # alembic must be on PATH
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "SDPA_NB_SECRET": SECRET}
    nbgrader("generate_assignment", "sdpa", "--force", cwd=course, env=env)
    nbgrader("release_assignment", "sdpa", "--force", cwd=course, env=env)
    source = nbformat.read(course / "source" / "sdpa" / "sdpa.ipynb", as_version=4)
    students = {
        "alice": {},  # correct everywhere
        "bob": {
            "scale_scores": "import math\n\n\ndef scale_scores(scores, d_k):\n    return scores / d_k\n",
            "q_variance": "q_variance = 8",
        },  # a classic mistake, and one wrong answer
        "carol": {"dot_product_variance": LOOP},  # loops forever in one function
        # attacks the grader from one function, answers every question wrongly, and patches the quiz's check
        "mallory": {
            "dot_product_variance": (SUBMISSIONS / "notebook" / "steal_everything.py")
            .read_text()
            .replace("@PROJECT@", str(ROOT))
            .replace("@COURSE@", str(course))
            .replace("@OUTSIDE@", str(base)),
            **WRONG_ANSWERS,
        },
    }
    for name, overrides in students.items():
        home = base / "students" / name
        home.mkdir(parents=True)
        student_env = {**env, "USER": name, "LOGNAME": name}
        nbgrader("fetch_assignment", "sdpa", *COURSE, f"--Exchange.root={exchange}", cwd=home, env=student_env)
        path = home / "sdpa" / "sdpa.ipynb"
        nbformat.write(answered(nbformat.read(path, as_version=4), source, overrides), path)
        nbgrader(
            "submit", "sdpa", *COURSE, f"--student={name}", f"--Exchange.root={exchange}", cwd=home, env=student_env
        )
    logs = {"collect": nbgrader("collect", "sdpa", cwd=course, env=env)}
    logs["autograde"] = nbgrader("autograde", "sdpa", "--force", cwd=course, env=env)
    logs["generate_feedback"] = nbgrader("generate_feedback", "sdpa", "--force", cwd=course, env=env)
    nbgrader("export", cwd=course, env=env)
    return {"course": course, "env": env, "base": base, "logs": {k: r.stdout + r.stderr for k, r in logs.items()}}


def test_release_holds_no_solution_and_no_hidden_test(course):
    """The notebook students receive has no solution line and no hidden check."""
    text = (course["course"] / "release" / "sdpa" / "sdpa.ipynb").read_text()
    lines = solution_lines(REFERENCE.read_text())
    assert [line for line in lines if json.dumps(line)[1:-1] in text] == []
    assert "run_check" not in text and "check_answer" not in text
    # the stubs say what to do, as the .py template's do
    assert 'raise NotImplementedError(\\"replace this line with your code\\")' in text
    for question in QUESTIONS:
        assert f"{question.name} = {question.answer!r}" not in text


def _scores(course):
    with open(course["course"] / "grades.csv") as handle:
        return {row["student_id"]: (float(row["score"]), float(row["max_score"])) for row in csv.DictReader(handle)}


def test_export_scores_each_student(course):
    """Alice gets everything; Bob loses the scaling check (once: error carried forward) and one answer; Carol loses
    only the variance checks; Mallory loses only her own points: the variance checks, the integrity flags her code
    earns, the ten questions."""
    scores, full = _scores(course), total(notebook=True)
    variance = points("variance_close") + points("variance_uses_generator")
    assert scores["alice"] == (full, full)
    # bob: scale_values and q_variance; the checks that fail only through his scale_scores (sdpa, mha, their gates)
    # keep their points, as [scoring] borrowed = "carry_forward" (the default) says, on this path too
    assert scores["bob"] == (full - points("scale_values") - POINTS, full)
    assert scores["carol"] == (full - variance, full)
    # mallory: variance, integrity of sdpa and mha (her cell imports importlib, reads sys.modules), every question
    integrity = points("integrity_sdpa") + points("integrity_mha")
    assert scores["mallory"] == (full - variance - integrity - len(QUESTIONS) * POINTS, full)


def test_feedback_reveals_no_test_logic(course):
    """Generated feedback shows the failure sentence, not the hidden inputs, expected values or check code."""
    feedback = next((course["course"] / "feedback" / "bob" / "sdpa").glob("*.html")).read_text()
    assert "divided by d_k, not by sqrt(d_k)" in feedback
    assert "Correct once scale_scores is fixed" in feedback
    assert "draw.normal" not in feedback and "expect_tensor" not in feedback
    assert "q_variance = 64" not in feedback and "answer=64" not in feedback


def _cell_scores(course) -> dict[str, dict[str, float]]:
    """Each student's points per graded cell, as nbgrader's gradebook holds them (grade id -> score)."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course['course'] / 'gradebook.db'}", "sdpa-course") as gradebook:
        return {
            student: {
                grade.name: grade.score for grade in gradebook.find_submission_notebook("sdpa", "sdpa", student).grades
            }
            for student in _scores(course)
        }


def test_sdpa_grade_agrees_with_nbgrader_on_submitted(course, tmp_path):
    """sdpa-grade batch on nbgrader's submitted/ folder gives each student the same points as nbgrader,
    check by check, each knowledge-check question included."""
    out = tmp_path / "grades"
    result = run(
        [str(BIN / "sdpa-grade"), "batch", str(course["course"] / "submitted"), "--json-dir", str(out)], timeout=900
    )
    assert result.returncode == 0, result.stderr[-3000:]
    for student, cells in _cell_scores(course).items():
        graded = json.loads((out / f"{student}.json").read_text())
        by_check = {test["extra_data"]["check"]: test["score"] for test in graded["tests"]}
        in_notebook = {name.removeprefix("check_"): score for name, score in cells.items() if name.startswith("check_")}
        assert in_notebook == {check: by_check[check] for check in in_notebook}, student
        assert set(by_check) - set(in_notebook) == {"timing_gpu"}  # not run without a GPU: worth 0 here


def test_attacks_from_the_notebook_get_nothing(course):
    """Mallory's notebook reads, imports, walks, patches and writes: every attempt is denied, nothing is written, and
    her feedback page holds no line of the grader's files, no quiz answer and nothing of nbgrader's environment."""
    page = html.unescape((course["course"] / "feedback" / "mallory" / "sdpa" / "sdpa.html").read_text())
    assert [attack for attack in ATTACKS if f"{attack}=denied" not in page] == []
    assert not (course["course"] / "mallory_was_here").exists() and not (course["base"] / "mallory_was_here").exists()
    own = nbformat.read(course["course"] / "submitted" / "mallory" / "sdpa" / "sdpa.ipynb", as_version=4)
    release = nbformat.read(course["course"] / "release" / "sdpa" / "sdpa.ipynb", as_version=4)
    shown_anyway = {line.strip() for cell in own.cells + release.cells for line in cell.source.splitlines()}
    grader = [
        REFERENCE,
        ROOT / "autograder" / "checks" / "quiz.py",
        ROOT / "autograder" / "scoring.py",
        *sorted((ROOT / "autograder" / "checks").glob("*.py")),
    ]
    lines = {line.strip() for path in grader for line in path.read_text().splitlines() if len(line.strip()) >= 30}
    public = "\n".join(" ".join(cell.source.split()) for cell in own.cells + release.cells)  # docstrings, joined
    assert sorted(line for line in lines - shown_anyway if line in page and line not in public) == []
    assert SECRET not in page and "### BEGIN SOLUTION" not in page
    assert [
        q.name for q in QUESTIONS if f"{q.name!r}, {q.answer!r}" in page or f'"{q.name}", {q.answer!r}' in page
    ] == []


def _hidden_cells(course, student):
    notebook = nbformat.read(course["course"] / "autograded" / student / "sdpa" / "sdpa.ipynb", as_version=4)
    return {
        c.metadata["nbgrader"]["grade_id"]: c
        for c in notebook.cells
        if c.metadata.get("nbgrader", {}).get("grade_id", "").startswith("check_")
    }


def test_failed_hidden_cells_show_the_message_not_a_traceback(course):
    """A failed hidden cell's output is the check's name and its wrapped feedback: no traceback, no grader path."""
    cells = _hidden_cells(course, "bob")
    failed = {name: cell for name, cell in cells.items() if any(o.output_type == "error" for o in cell.outputs)}
    assert {"check_scale_values", "check_q_variance"} <= set(failed)
    for name, cell in failed.items():
        lines = [line for o in cell.outputs if o.output_type == "error" for line in o.traceback]
        text = "\n".join(lines)
        assert lines[0] == f"{name.removeprefix('check_')}: failed", text
        assert "Traceback" not in text and "File " not in text and "autograder/" not in text, text
        assert max(len(line) for line in lines) <= 90, text
    scale = "\n".join(failed["check_scale_values"].outputs[0].traceback)
    assert "\n  Likely cause: you divided by d_k" in scale


def test_feedback_page_names_each_check_and_wraps(course):
    """The feedback HTML names each graded cell in its table of contents, wraps error output,
    and shows no grader path."""
    feedback = (course["course"] / "feedback" / "bob" / "sdpa" / "sdpa.html").read_text()
    assert "Test cell" not in feedback
    assert "Hidden check: scale_values" in feedback and "Knowledge check: q_variance" in feedback
    assert "Public tests of masked_softmax" in feedback
    assert "white-space: pre-wrap" in feedback
    assert "autograder/" not in feedback
    assert "8 is not the expected answer (a number); reread 'Why scale?' in the handout" in feedback


def test_nbgrader_logs_hold_no_false_alarms(course):
    """Autograde does not report restored hidden tests as changed cells; the shipped config is all recognised."""
    for step, log in course["logs"].items():
        assert "not recognized" not in log and "in config, not" not in log, f"{step}:\n{log[-3000:]}"
    assert "Attribute 'checksum'" not in course["logs"]["autograde"], course["logs"]["autograde"][-3000:]


def test_one_worker_zygote_grades_every_notebook_of_a_run(course):
    """The four students' notebooks are graded through one worker zygote (torch imported once per run, as a batch
    does), each in a sandbox of its own (test_export_scores_each_student: each gets their own grade)."""
    log = course["logs"]["autograde"]
    assert log.count("the worker zygote started") == 1, log[-3000:]
    assert len(_scores(course)) == 4


def _course_with_settings(base):
    """The course, its nbgrader_config.py naming course.toml as GradeNotebook's settings_file, its source notebook's
    check_scale_values cell worth 5; the assignment generated; bob's notebook (scores divided by d_k) in submitted/,
    as collect leaves it."""
    course = base / "course"
    shutil.copytree(
        ROOT / "assignments",
        course,
        ignore=shutil.ignore_patterns("release", "submitted", "autograded", "feedback", "exchange", "gradebook.db"),
    )
    with open(course / "nbgrader_config.py", "a") as config:
        config.write('\nc.GradeNotebook.settings_file = "course.toml"\n')
    path = course / "source" / "sdpa" / "sdpa.ipynb"
    source = nbformat.read(path, as_version=4)
    cell = next(c for c in source.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "check_scale_values")
    cell.metadata["nbgrader"]["points"] = 5
    nbformat.write(source, path)
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    nbgrader("generate_assignment", "sdpa", "--force", cwd=course, env=env)
    release = nbformat.read(course / "release" / "sdpa" / "sdpa.ipynb", as_version=4)
    bob = {"scale_scores": "import math\n\n\ndef scale_scores(scores, d_k):\n    return scores / d_k\n"}
    submitted = course / "submitted" / "bob" / "sdpa" / "sdpa.ipynb"
    submitted.parent.mkdir(parents=True)
    nbformat.write(answered(release, source, bob), submitted)
    return course, env, submitted


@pytest.mark.timeout(120)
def test_nbgrader_grades_with_the_courses_settings_file(tmp_path):
    """c.GradeNotebook.settings_file = "course.toml". While it gives scale_values 7 points and the notebook's cell is
    worth 5, autograde refuses the notebook, naming the cell and both values (once it gave the defaults, silently).
    With 5 on both sides, nbgrader's export gives bob what `sdpa-grade --config course.toml` gives him, out of the
    same maximum, the knowledge check included on both."""
    course, env, submitted = _course_with_settings(tmp_path)
    (course / "course.toml").write_text("[points]\nscale_values = 7\n")
    refused = run([str(BIN / "nbgrader"), "autograde", "sdpa", "--force"], cwd=course, env=env, timeout=900)
    said = refused.stdout + refused.stderr
    assert "check_scale_values is worth 5 in the notebook, 7 in [points] scale_values" in said, said[-3000:]
    assert "course.toml (--config)" in said
    (course / "course.toml").write_text("[points]\nscale_values = 5\n")
    nbgrader("autograde", "sdpa", "--force", cwd=course, env=env)
    nbgrader("export", cwd=course, env=env)
    exported = _scores({"course": course})["bob"]
    result = run(
        [
            str(BIN / "sdpa-grade"),
            str(submitted),
            "--config",
            str(course / "course.toml"),
            "--json",
            str(tmp_path / "bob.json"),
        ],
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    graded = json.loads((tmp_path / "bob.json").read_text())
    quiz = len(QUESTIONS)  # one point each; bob answers every question right
    settings = load_settings(course / "course.toml", environ={})
    assert graded["max_score"] == sum(v for k, v in settings.points.items() if k != "timing_gpu") + quiz  # no GPU here
    assert exported == (graded["score"], graded["max_score"])
    assert next(t for t in graded["tests"] if t["name"].endswith("scale_values"))["score"] == 0
