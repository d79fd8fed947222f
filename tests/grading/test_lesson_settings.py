"""The lesson's shapes and one check's tolerance as settings: what the checks grade with, and what sdpa-build writes."""

from __future__ import annotations

import json
import shutil

import pytest

from autograder.assignment.paths import NOTEBOOK
from autograder.checks.quiz import BY_NAME, POINTS, QUESTIONS, answer_cells, questions, results, verdict
from autograder.config import load_settings
from autograder.grade import _pytest
from autograder.plugin import GradingPlugin
from autograder.release import lesson as shapes
from autograder.status import Status
from tests.helpers import BIN, REFERENCE, ROOT, TEMPLATE_DIR, run, sources_only
from tests.in_process import InProcess

DEFAULTS = load_settings(environ={})
# distinct sizes for every axis, none of them the defaults'
LESSON = "[lesson]\nbatch = 3\nsequence = 5\nkey_sequence = 4\nd_k = 6\nd_v = 7\n"
# scale_scores off by 1e-4 of its value: 10x outside the float64 tolerance, well inside 1e-3
SCALE_OFF = "\n\ndef scale_scores(scores, d_k):\n    return scores / math.sqrt(d_k) * (1 + 1e-4)\n"
# the reference's attention, with the shapes it was called on kept where the test can read them
RECORD_SHAPES = (
    "\n\nCALLED_WITH = []\n_reference_attention = scaled_dot_product_attention\n\n\n"
    "def scaled_dot_product_attention(Q, K, V, *args, **kwargs):\n"
    "    CALLED_WITH.append((tuple(Q.shape), tuple(K.shape), tuple(V.shape)))\n"
    "    return _reference_attention(Q, K, V, *args, **kwargs)\n"
)


def graded(settings, overlay: str = "", select: str = "not integrity and not timing") -> tuple[dict, dict]:
    """The checks ``select`` names, graded in this process (tests/in_process.py) on the reference with ``overlay``
    appended: check -> its status, and the submission's namespace."""
    namespace: dict = {}
    exec(compile(REFERENCE.read_text() + overlay, "attention.py", "exec"), namespace)  # noqa: S102 - our own
    runner = InProcess(namespace)
    plugin = GradingPlugin(lambda: runner, settings, 7, "cpu")
    _pytest(plugin, "-k", select, "--timeout", "120")
    return {check: outcome.status for check, outcome in plugin.outcomes.items()}, namespace


def settings_file(tmp_path, text: str):
    path = tmp_path / "course.toml"
    path.write_text(text)
    return load_settings(path, environ={})


def test_one_checks_tolerance_loosens_that_check_alone(tmp_path):
    """scale_scores 1e-4 off fails scale_values by default and passes it with [tolerance.scale_values]; every other
    check's outcome stays as it was, and the other checks read [tolerance] as before."""
    loose = settings_file(tmp_path, "[tolerance.scale_values]\nfloat64_rtol = 1e-3\n")
    assert loose.for_check("scale_values").tolerance("float64") == (1e-5, 1e-3)
    assert loose.for_check("output_values").tolerance("float64") == DEFAULTS.tolerance("float64") == (1e-5, 1e-5)
    before, _ = graded(DEFAULTS, SCALE_OFF)
    after, _ = graded(loose, SCALE_OFF)
    assert before["scale_values"] == Status.FAILED and after["scale_values"] == Status.PASSED
    assert {check: status for check, status in after.items() if check != "scale_values"} == {
        check: status for check, status in before.items() if check != "scale_values"
    }
    assert before["sdpa_matches_torch"] == Status.FAILED  # it builds on scale_scores: still judged by [tolerance]


def test_the_lesson_check_grades_the_settings_shapes(tmp_path):
    """sdpa_lesson_shape calls the attention on the [lesson] shapes of the settings and expects its output and
    weights in them; by default, on the shipped ones."""
    lesson = settings_file(tmp_path, LESSON)
    status, namespace = graded(lesson, RECORD_SHAPES, "sdpa_lesson_shape")
    assert status == {"sdpa_lesson_shape": Status.PASSED}
    assert namespace["CALLED_WITH"] == [((3, 5, 6), (3, 5, 6), (3, 5, 7))]
    status, namespace = graded(DEFAULTS, RECORD_SHAPES, "sdpa_lesson_shape")
    assert status == {"sdpa_lesson_shape": Status.PASSED}
    lesson = DEFAULTS.lesson
    queries, values = (lesson.batch, lesson.sequence, lesson.d_k), (lesson.batch, lesson.sequence, lesson.d_v)
    assert namespace["CALLED_WITH"] == [(queries, queries, values)]


def test_a_wrong_shape_on_the_lesson_fails_the_lesson_check(tmp_path):
    """An attention that answers in the defaults' shapes whatever it is given fails on another lesson's."""
    queries = shapes.text_of(shapes.shapes(DEFAULTS.lesson)["queries and keys"])
    values = shapes.text_of(shapes.shapes(DEFAULTS.lesson)["values and the output"])
    default_shapes = (
        "\n\n_reference_attention = scaled_dot_product_attention\n\n\n"
        "def scaled_dot_product_attention(Q, K, V, *args, **kwargs):\n"
        f"    return _reference_attention(torch.zeros{queries}, torch.zeros{queries}, torch.zeros{values})\n"
    )
    status, _ = graded(DEFAULTS, default_shapes, "sdpa_lesson_shape")
    assert status == {"sdpa_lesson_shape": Status.PASSED}
    status, _ = graded(settings_file(tmp_path, LESSON), default_shapes, "sdpa_lesson_shape")
    assert status == {"sdpa_lesson_shape": Status.FAILED}


def test_the_sources_are_written_with_the_default_lesson():
    """The handout, the lesson check's docstring, the public tests' lesson line and the knowledge check name the
    shipped [lesson]'s shapes: a build with the defaults writes every file as it is committed."""
    from autograder.assignment.catalogue import catalogue

    roles = {role: shapes.text_of(shape) for role, shape in shapes.shapes(DEFAULTS.lesson).items()}
    assert len(set(roles.values())) == len(roles)  # each shape can be told from the others
    handout = (ROOT / "docs" / "handout.md").read_text()
    doc = next(entry.doc for entry in catalogue() if entry.check == "sdpa_lesson_shape")
    for role in ("queries and keys", "values and the output", "scores and weights"):
        assert roles[role] in handout and roles[role] in doc, role
    lesson = DEFAULTS.lesson
    public = (TEMPLATE_DIR / "test_attention.py").read_text()
    assert f"B, T, d_k, d_v = {lesson.batch}, {lesson.sequence}, {lesson.d_k}, {lesson.d_v}  #" in public
    assert shapes.render_public_tests(public, lesson) == public
    asked = {question.name: question for question in QUESTIONS}
    assert roles["the knowledge check's keys"] in asked["q_scores_shape"].text
    assert asked["q_scores_shape"].answer == shapes.shapes(lesson)["the knowledge check's scores"]
    assert asked["q_output_shape"].answer == shapes.shapes(lesson)["values and the output"]


def test_sdpa_build_config_writes_the_lesson_into_what_students_receive(tmp_path):
    """sdpa-build --config FILE writes [lesson]'s shapes into the public tests (which pass on the reference), the
    handout and the notebook's knowledge check and lesson check; a build with the defaults writes them back."""
    project = sources_only(tmp_path / "project")
    config = tmp_path / "course.toml"
    config.write_text(LESSON)
    built = run([str(BIN / "sdpa-build"), "--root", str(project), "--config", str(config)])
    assert built.returncode == 0, built.stderr
    public = (project / "student_template" / "test_attention.py").read_text()
    assert "    B, T, d_k, d_v = 3, 5, 6, 7  # the lesson's sizes" in public
    handout = (project / "student_template" / "handout.md").read_text()
    assert "queries (3, 5, 6), keys (3, 5, 6) and values (3, 5, 7)" in handout
    assert "weights of shape (3, 5, 5) and an output of shape (3, 5, 7)" in handout
    defaults = [shapes.text_of(shape) for shape in shapes.shapes(DEFAULTS.lesson).values()]
    assert not [shape for shape in defaults if shape in handout]
    cells = json.loads((project / NOTEBOOK).read_text())["cells"]
    text = "\n".join(cell["source"] for cell in cells)
    assert "Q has shape (3, 5, 6) and K has shape (3, 4, 6)" in text
    assert "With Q (3, 5, 6), K (3, 5, 6) and V (3, 5, 7)" in text
    assert "q_scores_shape = (3, 5, 4)" in text and "q_output_shape = (3, 5, 7)" in text
    assert "B, T, d_k, d_v = 3, 5, 6, 7" in text
    assert "# Hidden check sdpa_lesson_shape (2 points): The lesson's question: (3, 5, 6), (3, 5, 6), (3, 5, 7)" in text
    assert not [shape for shape in defaults if shape in text]
    answers = answer_cells(cells)  # the notebook's own answers are right for the lesson it was built with
    lesson = settings_file(tmp_path, LESSON).lesson
    assert all(test["score"] == test["max_score"] for test in results(cells, "visible", lesson=lesson))
    assert verdict("q_scores_shape", answers["q_scores_shape"].source) != ""  # not for the defaults'
    folder = project / "student_template"
    shutil.copy(REFERENCE, folder / "attention.py")
    tested = run([str(BIN / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "lesson"], cwd=folder)
    assert tested.returncode == 0, tested.stdout
    assert run([str(BIN / "sdpa-build"), "--check", "--root", str(project)]).returncode == 1
    assert run([str(BIN / "sdpa-build"), "--root", str(project)]).returncode == 0
    assert (project / "student_template" / "test_attention.py").read_bytes() == (
        TEMPLATE_DIR / "test_attention.py"
    ).read_bytes()
    assert (project / "student_template" / "handout.md").read_bytes() == (TEMPLATE_DIR / "handout.md").read_bytes()


def test_sdpa_build_refuses_a_bad_config(tmp_path):
    """A --config whose [lesson] cannot be used stops the build with exit 2 and the setting named; nothing written."""
    project = sources_only(tmp_path / "project")
    config = tmp_path / "course.toml"
    config.write_text("[lesson]\nbatch = 0\n")
    built = run([str(BIN / "sdpa-build"), "--root", str(project), "--config", str(config)])
    assert built.returncode == 2 and "Invalid lesson.batch 0" in built.stderr
    assert not (project / NOTEBOOK).exists()


def test_the_knowledge_check_asks_and_grades_the_settings_lesson(tmp_path):
    """The questions on shapes are asked on the lesson's shapes and graded against them; the others do not change."""
    lesson = settings_file(tmp_path, LESSON).lesson
    asked = {question.name: question for question in questions(lesson)}
    assert [question.name for question in QUESTIONS] == list(asked)
    assert asked["q_scores_shape"].answer == (3, 5, 4) and "(3, 4, 6)" in asked["q_scores_shape"].text
    assert asked["q_output_shape"].answer == (3, 5, 7)
    assert verdict("q_scores_shape", "q_scores_shape = (3, 5, 4)", lesson=lesson) == ""
    default = verdict("q_scores_shape", f"q_scores_shape = {BY_NAME['q_scores_shape'].answer}", lesson=lesson)
    assert "is not the expected answer" in default
    assert {name: q.answer for name, q in asked.items() if "shape" not in name} == {
        q.name: q.answer for q in QUESTIONS if "shape" not in q.name
    }


def test_render_refuses_what_it_cannot_tell_apart(tmp_path):
    """Sources written with a lesson that gives two roles one shape cannot be rendered; public tests without their
    one lesson line cannot either."""
    same = settings_file(tmp_path, f"[lesson]\nd_v = {DEFAULTS.lesson.d_k}\n").lesson  # values shaped as queries
    queries = shapes.text_of(shapes.shapes(DEFAULTS.lesson)["queries and keys"])
    with pytest.raises(ValueError, match="two roles one shape"):
        shapes.render(queries, same, DEFAULTS.lesson)
    other = "(7, 7, 7)"  # no shape of the lesson's: left as it is
    assert shapes.render(f"{queries} {other}", DEFAULTS.lesson, same) == f"{queries} {other}"
    with pytest.raises(ValueError, match="hold 0 lines"):
        shapes.render_public_tests("def test_x():\n    pass\n", DEFAULTS.lesson)


def test_a_handout_not_written_with_the_shipped_lesson_stops_the_build(tmp_path):
    """A handout whose example is not the shipped [lesson]'s cannot be built with any lesson: sdpa-build exits 2
    naming the file and the shape, and sdpa-build --config FILE is the way to build another lesson."""
    project = sources_only(tmp_path / "project")
    values = shapes.text_of(shapes.shapes(DEFAULTS.lesson)["values and the output"])
    handout = project / "docs" / "handout.md"
    handout.write_text(handout.read_text().replace(values, "(2, 3, 5)"))
    built = run([str(BIN / "sdpa-build"), "--root", str(project)])
    assert built.returncode == 2
    assert f"docs/handout.md does not name the shape of the lesson's values and the output, {values}" in built.stderr
    assert "sdpa-build --config FILE" in built.stderr


def test_sdpa_grade_scores_a_notebooks_shape_answers_on_the_settings_lesson(tmp_path):
    """sdpa-grade's knowledge check of a notebook grades the answers on shapes against the grading settings'
    [lesson]: right for the lesson the notebook was built with, wrong for another."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    from autograder.grade import Grading, knowledge_check
    from autograder.read.handed_in import take

    answers = {"q_scores_shape": "q_scores_shape = (3, 5, 4)", "q_output_shape": "q_output_shape = (3, 5, 7)"}
    cells = [
        new_code_cell(source, metadata={"nbgrader": {"solution": True, "grade_id": name}})
        for name, source in answers.items()
    ]
    path = tmp_path / "sdpa.ipynb"
    nbformat.write(new_notebook(cells=cells), path)
    scored = {}
    for label, settings in (("lesson", settings_file(tmp_path, LESSON)), ("defaults", DEFAULTS)):
        grading = Grading(path, settings, handed=take(path, settings.limits))
        tests = knowledge_check(grading).questions
        scored[label] = {
            test["extra_data"]["check"]: test["score"] for test in tests if test["extra_data"]["check"] in answers
        }
    assert scored == {"lesson": dict.fromkeys(answers, float(POINTS)), "defaults": dict.fromkeys(answers, 0.0)}
