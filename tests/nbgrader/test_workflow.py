"""The instructor's whole nbgrader workflow, on real nbgrader, run once for the module with five students: alice
(correct), bob (a classic mistake and a wrong answer), carol (loops in one function), mallory (attacks the grader) and
dave (an attention that forgets to scale, a variance that raises in its cell): the release, the export's scores,
sdpa-grade's agreement check by check, the attacks, and what the feedback pages say (dave's: a carried check, a
withheld one, an error cited by its cell)."""

from __future__ import annotations

import concurrent.futures
import html
import json
import os
import re
import shutil

import nbformat
import pytest

from autograder.checks.quiz import POINTS, QUESTIONS
from autograder.release.template import solution_lines
from tests.helpers import BIN, REFERENCE, ROOT, SUBMISSIONS, answered, nbgrader, points, run, total
from tests.nbgrader.common import exported_scores

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
DAVE = {  # the attention forgets to scale (its own mistake); the variance raises in its cell
    "scaled_dot_product_attention": (
        "def scaled_dot_product_attention(Q, K, V, mask=None, is_causal=False):\n"
        "    if is_causal:\n"
        "        causal = causal_mask(Q.size(-2), K.size(-2), device=Q.device)\n"
        "        mask = causal if mask is None else mask & causal\n"
        "    weights = masked_softmax(attention_scores(Q, K), mask)\n"
        "    return attention_output(weights, V), weights\n"
    ),
    "dot_product_variance": (
        "def dot_product_variance(d_k, num_samples=10000, generator=None):\n    x = 1\n    raise ValueError('oops')\n"
    ),
}
WRONG_ANSWERS = {q.name: f"{q.name} = {not q.answer if isinstance(q.answer, bool) else q.example}" for q in QUESTIONS}


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """Generate, release, fetch, submit (five students), collect, autograde, give feedback, export."""
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
        "dave": DAVE,  # every answer right
    }

    def hand_in(name: str, overrides: dict) -> None:
        home = base / "students" / name
        home.mkdir(parents=True)
        student_env = {**env, "USER": name, "LOGNAME": name}
        nbgrader("fetch_assignment", "sdpa", *COURSE, f"--Exchange.root={exchange}", cwd=home, env=student_env)
        path = home / "sdpa" / "sdpa.ipynb"
        nbformat.write(answered(nbformat.read(path, as_version=4), source, overrides), path)
        nbgrader(
            "submit", "sdpa", *COURSE, f"--student={name}", f"--Exchange.root={exchange}", cwd=home, env=student_env
        )

    # the students fetch and submit at once, as a class does before a deadline (one after another, their ten
    # nbgrader commands took 39 s of this fixture's 107)
    with concurrent.futures.ThreadPoolExecutor(len(students)) as pool:
        for done in [pool.submit(hand_in, name, overrides) for name, overrides in students.items()]:
            done.result()
    logs = {"collect": nbgrader("collect", "sdpa", cwd=course, env=env)}
    logs["autograde"] = nbgrader("autograde", "sdpa", "--force", cwd=course, env=env)
    logs["generate_feedback"] = nbgrader("generate_feedback", "sdpa", "--force", cwd=course, env=env)
    nbgrader("export", cwd=course, env=env)
    logs = {k: r.stdout + r.stderr for k, r in logs.items()}
    return {"course": course, "env": env, "base": base, "logs": logs, "students": list(students)}


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


def test_export_scores_each_student(course):
    """Alice gets everything; Bob loses the scaling check (once: error carried forward) and one answer; Carol loses
    only the variance checks; Mallory loses only her own points: the variance checks, the integrity flags her code
    earns, the ten questions."""
    scores, full = exported_scores(course["course"]), total(notebook=True)
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
            for student in exported_scores(course["course"])
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
    """The students' notebooks are graded through one worker zygote (torch imported once per run, as a batch
    does), each in a sandbox of its own (test_export_scores_each_student: each gets their own grade)."""
    log = course["logs"]["autograde"]
    assert log.count("the worker zygote started") == 1, log[-3000:]
    assert sorted(exported_scores(course["course"])) == sorted(course["students"])


# ---- dave's feedback page: what each verdict says -------------------------------------------------------------------


@pytest.fixture(scope="module")
def dave(course) -> dict:
    """dave's feedback page, and each solution cell's number (counted from the top) in the notebook he handed in."""
    page = (course["course"] / "feedback" / "dave" / "sdpa" / "sdpa.html").read_text()
    notebook = nbformat.read(course["course"] / "submitted" / "dave" / "sdpa" / "sdpa.ipynb", as_version=4)
    cells = {c.metadata.get("nbgrader", {}).get("grade_id"): n for n, c in enumerate(notebook.cells, 1)}
    return {"page": page, "cells": cells}


def output_of(page: str, grade_id: str) -> str:
    """The text of a graded cell's outputs on the feedback page."""
    start = page.index(f'<a name="{grade_id}"></a>')
    outputs = page[start:].split('<div class="output_wrapper">', 1)[1].split('<div class="cell ', 1)[0]
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", outputs))).strip()


def test_a_carried_check_says_kept_its_points(dave):
    """The module's check fails only through the attention: "kept its points" and why, no "failed"."""
    shown = output_of(dave["page"], "check_mha_matches_torch")
    assert shown.startswith("mha_matches_torch: kept its points"), shown
    assert "Correct once scaled_dot_product_attention is fixed" in shown and ": failed" not in shown


def test_a_withheld_check_says_withheld_and_why(dave):
    """The attention's integrity check: withheld, not awarded yet, and what awards it; never a bare 0."""
    shown = output_of(dave["page"], "check_integrity_sdpa")
    assert shown.startswith("integrity_sdpa: withheld (not awarded yet)"), shown
    assert "once scaled_dot_product_attention passes its own correctness checks" in shown, shown


def test_an_error_in_a_cell_is_cited_by_the_cell(dave):
    """The variance's error names its cell (counted from the top) and line, never attention.py."""
    shown = output_of(dave["page"], "check_variance_close")
    cell = dave["cells"]["dot_product_variance"]
    assert f"ValueError: oops (cell {cell}, line 3)" in shown, shown
    assert "attention.py, line" not in dave["page"]
