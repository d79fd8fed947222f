"""`sdpa-grade` on one submission, as an instructor runs it: terminal table, results.json, exit codes."""

from __future__ import annotations

import json
import os
import re

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from autograder.checks import quiz
from autograder.cli import VERBS, forks_zygote, main
from autograder.read.submission import notebook_source
from autograder.status import Category
from tests.helpers import BIN, REFERENCE, ROOT, SUBMISSIONS, checks_of, maximum, run, said, total

SOURCE_NOTEBOOK = ROOT / "assignments" / "source" / "sdpa" / "sdpa.ipynb"


def grade(path, tmp_path, *extra):
    out = tmp_path / "results.json"
    result = run([str(BIN / "sdpa-grade"), "grade", str(path), "--json", str(out), *extra])
    return result, json.loads(out.read_text())


def test_reference_gets_full_marks_in_gradescope_format(graded_file):
    """Exit 0, a table ending in the total, and a results.json Gradescope can read, with tags."""
    result, results = graded_file(REFERENCE)
    assert result.returncode == 0, result.stderr
    assert "total" in result.stdout and f"{total():g}/{maximum():g}" in result.stdout
    assert set(results) >= {"score", "execution_time", "output", "tests"}
    assert results["score"] == total() == sum(test["score"] for test in results["tests"])
    for test in results["tests"]:
        assert set(test) >= {"name", "score", "max_score", "output", "visibility", "tags"}
        function, category = test["tags"]
        assert category in {*Category, quiz.CATEGORY} and function in test["name"]


def test_notebook_with_solutions_gets_full_marks(graded_file):
    """The source notebook (solution and set-up cells, not its test cells) grades like the reference."""
    result, results = graded_file(SOURCE_NOTEBOOK)
    assert result.returncode == 0, result.stderr
    assert results["score"] == results["max_score"] == maximum()  # its knowledge check too, as nbgrader


def test_missing_submission_exits_2_with_a_results_file(tmp_path):
    """A path that does not exist: exit 2 and the reason on stderr, and still a valid results file
    (0 of the usual maximum)."""
    result, results = grade(tmp_path / "nothing.py", tmp_path)
    assert result.returncode == 2, result.stderr
    assert "there is no file or folder at" in result.stderr
    assert results["score"] == 0 and "there is no file or folder at" in results["output"]
    assert results["max_score"] == maximum()


def test_folder_without_a_submission_exits_2(tmp_path):
    """A folder that holds no attention.py and no notebook is a missing submission too."""
    folder = tmp_path / "alice"
    folder.mkdir()
    result, results = grade(folder, tmp_path)
    assert result.returncode == 2, result.stderr
    assert "holds no attention.py and no notebook" in result.stderr and results["score"] == 0


def test_every_submission_has_the_same_maximum(tmp_path, graded_file):
    """Loadable, unloadable or ungradable, a .py or a notebook, with its knowledge check or without: on one machine
    every results file has the same max_score, the checks' points and the knowledge check's. The same correct code
    scores the checks' points in attention.py and in a notebook without the answer cells, and the knowledge check's
    too in the notebook that answers it."""
    broken = tmp_path / "broken.py"
    broken.write_text("def attention_scores(Q, K)\n    return Q\n")
    empty = tmp_path / "empty.py"
    empty.write_text("")
    notebook = nbformat.read(SOURCE_NOTEBOOK, as_version=4)
    notebook.cells = [cell for cell in notebook.cells if not _answers_a_question(cell)]
    unanswered = tmp_path / "unanswered.ipynb"
    nbformat.write(notebook, unanswered)
    graded = {path: graded_file(path)[1] for path in (REFERENCE, SOURCE_NOTEBOOK, unanswered, broken, empty)}
    assert {results["max_score"] for results in graded.values()} == {maximum()}
    assert graded[REFERENCE]["score"] == graded[unanswered]["score"] == total()
    assert graded[SOURCE_NOTEBOOK]["score"] == maximum()


def _answers_a_question(cell) -> bool:
    """A knowledge-check answer cell of the source notebook (its grade id a question's)."""
    return cell.metadata.get("nbgrader", {}).get("grade_id") in quiz.BY_NAME and cell.metadata["nbgrader"]["solution"]


@pytest.mark.parametrize("handed_in", ["attention.py", "a notebook without the answer cells"])
def test_a_missing_knowledge_check_counts_0_and_says_where_the_answers_go(tmp_path, graded_file, handed_in):
    """Each question is in the results, 0 of its points, not run (no answer to judge: no Gradescope status, as a check
    not run); the first says that the answers were not handed in and where they go (the notebook's 'Knowledge check'
    section, a cell per question), the others point to it."""
    path = REFERENCE
    if handed_in != "attention.py":
        notebook = nbformat.read(SOURCE_NOTEBOOK, as_version=4)
        notebook.cells = [cell for cell in notebook.cells if not _answers_a_question(cell)]
        path = tmp_path / "sdpa.ipynb"
        nbformat.write(notebook, path)
    result, results = graded_file(path)
    assert result.returncode == 0, result.stderr
    questions = [test for test in results["tests"] if test["tags"][0] == quiz.FUNCTION]
    assert [test["extra_data"]["check"] for test in questions] == [question.name for question in quiz.QUESTIONS]
    assert all((test["score"], test["max_score"]) == (0, quiz.POINTS) for test in questions)
    assert all(test["extra_data"]["outcome"] == "not-run" and "status" not in test for test in questions)
    first, *others = (test["output"] for test in questions)
    if handed_in == "attention.py":
        assert first.startswith("not handed in: this .py file sets none of"), first
        assert 'the end of attention.py, under its "Knowledge check" heading' in first and "one line per" in first
    else:
        assert first.startswith("not handed in: this notebook has none of the"), first
        assert "notebook (sdpa.ipynb)" in first and "'Knowledge check'" in first and "cell below each question" in first
    assert set(others) == {f"not handed in: see {quiz.QUESTIONS[0].name}"}
    assert f"{quiz.QUESTIONS[0].name}" in result.stdout and "not handed in" in result.stdout


def test_a_py_answers_the_knowledge_check_at_its_end_as_the_template_asks(tmp_path):
    """The template ends with the knowledge check, one line per question with the example in place of the answer (a
    placeholder that is no value, such as <True or False>, as None and a comment): a .py answers there, graded out of
    the one maximum. The reference's code with the template's section, its first half answered (one of those wrong),
    scores the checks and the right answers; an example left as it is loses its point, named as a wrong answer."""
    from autograder.config import load_settings
    from autograder.release.build import knowledge_check

    section = knowledge_check(load_settings(environ={}).lesson)
    assert section in (ROOT / "student_template" / "attention.py").read_text()
    answered, wrong = quiz.QUESTIONS[:5], quiz.QUESTIONS[0]
    for question in answered:
        value = "'z'" if question is wrong else repr(question.answer)
        section, count = re.subn(rf"(?m)^{question.name} = .*$", f"{question.name} = {value}", section)
        assert count == 1, question.name
    path = tmp_path / "attention.py"
    path.write_text(REFERENCE.read_text() + section)
    result, results = grade(path, tmp_path)
    assert result.returncode == 0, result.stderr
    assert (results["score"], results["max_score"]) == (total() + (len(answered) - 1) * quiz.POINTS, maximum())
    questions = {test["extra_data"]["check"]: test for test in results["tests"] if test["tags"][0] == quiz.FUNCTION}
    assert [name for name, test in questions.items() if test["score"]] == [q.name for q in answered if q is not wrong]
    for question in quiz.QUESTIONS[5:]:
        assert questions[question.name]["status"] == "failed", question.name
        assert "is not the expected answer" in questions[question.name]["output"], questions[question.name]["output"]


def test_a_load_error_is_told_once(tmp_path):
    """A syntax error is explained in one check; the others point there instead of repeating it."""
    broken = tmp_path / "broken.py"
    broken.write_text("def attention_scores(Q, K)\n    return Q\n")
    result, results = grade(broken, tmp_path)
    assert result.returncode == 0
    assert sum("SyntaxError" in test["output"] for test in results["tests"]) == 1
    assert result.stdout.count("SyntaxError") == 1
    first = next(test for test in results["tests"] if "SyntaxError" in test["output"])
    check = first["extra_data"]["check"]
    others = [test for test in results["tests"] if test is not first and test["max_score"] > 0
              and test["tags"][0] != quiz.FUNCTION]  # fmt: skip
    # the gates are withheld (no verdict on what does not load), the other checks point to the reason
    withheld = [test for test in others if test["extra_data"]["withheld"]]
    assert {test["extra_data"]["check"] for test in withheld} == {"integrity_sdpa", "integrity_mha", "timing_cpu"}
    assert all(test["output"].startswith("Not awarded yet") for test in withheld)
    pointing = [test for test in others if not test["extra_data"]["withheld"]]
    assert all(f"under {check}" in test["output"] for test in pointing), pointing[0]["output"]


def test_wrong_kind_of_file_is_ungradable(tmp_path):
    """A file that is neither .py nor .ipynb gets a clear reason."""
    path = tmp_path / "attention.txt"
    path.write_text("x = 1\n")
    _, results = grade(path, tmp_path)
    assert "neither a .py file nor a notebook" in results["ungradable"]


def test_notebook_cells_skip_magics_tests_and_keep_going(tmp_path):
    """Magics and shell escapes are dropped, test cells left out, and one failing cell does not stop the next."""
    notebook = new_notebook(cells=[
        new_code_cell("%matplotlib inline\n!pip install nothing\nimport torch"),
        new_code_cell("raise NotImplementedError()"),
        new_code_cell("def scale_scores(scores, d_k):\n    return scores / d_k ** 0.5"),
        new_code_cell("assert False",
                      metadata={"nbgrader": {"grade": True, "solution": False, "grade_id": "t", "points": 1}}),
    ])  # fmt: skip
    source = notebook_source(nbformat.writes(notebook))
    assert "matplotlib" not in source and "pip install" not in source and "assert False" not in source
    namespace: dict = {}
    exec(compile(source, "attention.py", "exec"), namespace)
    assert namespace["scale_scores"](4.0, 4) == 2.0


def test_grader_needs_a_submission_or_a_batch():
    """No arguments: a usage error (exit 2) naming the verbs, not a traceback."""
    result = run([str(BIN / "sdpa-grade")])
    assert result.returncode == 2 and "takes a verb: grade SUBMISSION, batch DIR" in result.stderr


def test_grader_failure_still_writes_results(tmp_path):
    """When the grader itself is broken (here: a broken reference shadows the real one),
    exit 3 and a valid results.json."""
    broken = tmp_path / "shadow" / "reference"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("")
    (broken / "attention.py").write_text("raise ImportError('a broken install')\n")
    out = tmp_path / "results.json"
    env = {**os.environ, "PYTHONPATH": str(broken.parent)}
    result = run([str(BIN / "sdpa-grade"), "grade", str(REFERENCE), "--json", str(out)], env=env)
    assert result.returncode == 3, result.stderr
    assert "the grader failed" in result.stderr
    results = json.loads(out.read_text())
    assert results["score"] == 0 and "a broken install" in results["grader_error"]


def test_correct_submission_shows_no_failed_test_on_gradescope(graded_file):
    """Gradescope paints a test red by its status: a correct submission has none 'failed'; the GPU check that was
    not run (0 of 0 here) has no status and is hidden from the student."""
    result, results = graded_file(REFERENCE)
    assert result.returncode == 0, result.stderr
    assert [test["name"] for test in results["tests"] if test.get("status") == "failed"] == []
    gpu = next(test for test in results["tests"] if test["name"].endswith("timing_gpu"))
    assert "status" not in gpu and gpu["visibility"] == "hidden" and gpu["max_score"] == 0
    ran = [test for test in checks_of(results) if test is not gpu]  # its knowledge check: not handed in, no status
    assert all(test["status"] == "passed" and test["visibility"] == "visible" for test in ran)


def test_no_message_claims_the_instructor_was_told(tmp_path):
    """Nothing tells the instructor of a grader failure by itself: no message says so; each asks for a regrade."""
    from autograder.release.gradescope import RUN
    from autograder.report import grader_failure

    assert "has been told" not in RUN and "ask your instructor to regrade" in RUN
    assert "ask your instructor to regrade" in grader_failure("boom")["output"]
    for path in (ROOT / "autograder").rglob("*.py"):
        assert "has been told" not in path.read_text(), path


def notebook_file(tmp_path, name: str, cells: list) -> object:
    return written(tmp_path / name, nbformat.writes(new_notebook(cells=cells)).encode())


def written(path, data: bytes):
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda tmp: tmp / "nothing.py", "there is no file or folder at"),
        (lambda tmp: written(tmp / "empty.py", b""), "the file empty.py is empty"),
        (
            lambda tmp: notebook_file(tmp, "words.ipynb", [new_markdown_cell("# only words")]),
            "the notebook words.ipynb holds no code",
        ),
        (
            lambda tmp: notebook_file(tmp, "blank.ipynb", [new_code_cell(""), new_code_cell("%matplotlib inline")]),
            "the notebook blank.ipynb holds no code",
        ),
        (lambda tmp: written(tmp / "broken.ipynb", b"{not json"), "the notebook broken.ipynb is not valid .ipynb JSON"),
        (lambda tmp: written(tmp / "latin.py", b"x = '\xe9'\n"), "the file latin.py is not UTF-8"),
    ],
    ids=["missing-path", "empty-py", "markdown-only-notebook", "notebook-without-code", "invalid-notebook", "not-utf8"],
)
def test_every_unreadable_submission_exits_2_naming_what_was_given(tmp_path, make, reason):
    """Missing, empty, without code, not JSON, not UTF-8: exit 2, the reason names the path, file or notebook given,
    and a results file with score 0 is written all the same."""
    result, results = grade(make(tmp_path), tmp_path)
    assert result.returncode == 2, result.stderr
    assert reason in result.stderr and reason in results["ungradable"]
    assert results["score"] == 0 and results["max_score"] == maximum()
    assert "attention.py could not be loaded" not in json.dumps(results)


def test_load_failure_of_a_notebook_names_the_notebook(tmp_path):
    """A notebook that never finishes loading is called a notebook in its feedback, not attention.py."""
    config = tmp_path / "fast.toml"
    config.write_text("[limits]\nload_timeout = 3.0\n")
    path = notebook_file(tmp_path, "sdpa.ipynb", [new_code_cell("import os\nos._exit(3)")])
    result, results = grade(path, tmp_path, "--config", str(config))
    assert result.returncode == 0, result.stderr
    assert "your notebook could not be loaded" in results["tests"][0]["output"]
    assert "attention.py" not in json.dumps(results["tests"])


@pytest.mark.parametrize(
    ("name", "sentence"),
    [
        ("run_program_at_import", "runs a program, which is not allowed while grading"),
        ("write_outside_at_import", "uses a file outside its own folder, which is not allowed while grading"),
        (
            "import_error",
            "imports numpy_but_misspelled; a submission may import only Python's standard library, torch and numpy",
        ),
    ],
)
def test_load_failure_says_what_is_not_allowed_with_the_students_line(tmp_path, name, sentence):
    """Running a program, a file outside the folder, a missing module: one sentence with the student's own line, and no
    path of the grader's (its interpreter, its folders) anywhere in what the student sees."""
    import sys

    result, results = grade(SUBMISSIONS / "standalone" / f"{name}.py", tmp_path)
    assert result.returncode == 0, result.stderr
    first = results["tests"][0]["output"]
    assert first.startswith("attention.py could not be loaded: line ") and sentence in first, first
    seen = result.stdout + json.dumps(results["tests"])
    for place in {sys.prefix, sys.base_prefix, str(ROOT), "/tmp/"}:
        assert place not in seen, place


def test_a_batchs_own_output_is_never_a_student(tmp_path):
    """The results folder a batch writes (here the default, beside the class) carries a marker, and a later batch over
    the folder above takes the class for a student but not the results folder."""
    from autograder.course.batch import students
    from autograder.read.handed_in import MARKER

    course = tmp_path / "course"
    (course / "class").mkdir(parents=True)
    (course / "class" / "alice.py").write_text(REFERENCE.read_text())
    summary = run([str(BIN / "sdpa-grade"), "summary", str(course / "class")])
    assert summary.returncode == 1, summary.stderr  # nothing graded yet: alice has no result
    assert (course / "class-grades" / MARKER).is_file()
    assert sorted(students(course)) == ["class"]


# ---- verbs: grade, batch, summary, diff (the older forms: tests/grading/test_older_forms.py) -------------------


def test_help_lists_each_verb_on_one_line(capsys, monkeypatch):
    """`sdpa-grade --help` names every verb, each on one line of its own (80 columns), with what it does."""
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = said(["--help"], capsys)
    assert code == 0
    listed = out.split("  VERB\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert [line.split()[0] for line in listed] == list(VERBS), listed
    assert all(len(line.split(maxsplit=1)[1]) > 20 for line in listed), listed


@pytest.mark.parametrize(
    ("verb", "own", "others"),
    [
        ("grade", ["--json", "--html", "--config", "--device", "--require-sandbox", "--submitted-at", "--metadata"],
         ["--jobs", "--csv", "--json-dir", "--batch"]),
        ("batch", ["--jobs", "--csv", "--force", "--shard", "--report", "--show", "--json-dir", "--config", "--device",
                   "--require-sandbox", "--times", "--similarity", "--diff"], ["--json", "--html", "--partial"]),
        ("summary", ["--json-dir", "--csv", "--partial", "--shard", "--report", "--config", "--similarity"],
         ["--jobs", "--force", "--show", "--html", "--device", "--times"]),
        ("diff", ["--csv"], ["--config", "--shard", "--force", "--report"]),
        ("push", ["--json-dir", "--config", "--dry-run", "--offline"], ["--csv", "--jobs", "--shard", "--report",
                                                                        "--device", "--times"]),
        ("override", ["--json-dir", "--config", "--reason", "SCORE"], ["--times", "--csv", "--until"]),
        ("extend", ["--json-dir", "--config", "--reason", "--until"], ["--times", "--csv", "--dry-run"]),
    ],
)  # fmt: skip
def test_each_verb_lists_its_own_options(capsys, verb, own, others):
    """`sdpa-grade VERB --help` lists that verb's options and no other verb's."""
    code, out, _ = said([verb, "--help"], capsys)
    assert code == 0 and out.startswith(f"usage: sdpa-grade {verb} ")
    words = set(out.replace(",", " ").replace("[", " ").replace("]", " ").split())
    assert set(own) <= words and not set(others) & words, (set(own) - words, set(others) & words)


@pytest.mark.parametrize(
    ("argv", "option", "owners"),
    [
        (["grade", "a.py", "--jobs", "4"], "--jobs", "batch"),
        (["grade", "a.py", "--csv=g.csv"], "--csv", "batch, summary, diff"),
        (["batch", "D", "--json", "r.json"], "--json", "grade"),
        (["summary", "D", "--force"], "--force", "batch"),
        (["diff", "old", "new", "--report", "r.html"], "--report", "batch, summary"),
        (["batch", "D", "--partial"], "--partial", "summary"),
    ],
)
def test_an_option_of_another_verb_is_refused_by_the_parser(capsys, argv, option, owners):
    """A verb given another verb's option: exit 2 before anything runs, naming the option and the verbs it fits."""
    code, out, err = said(argv, capsys)
    assert code == 2 and out == ""
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"sdpa-grade {argv[0]}: error: {option} does not apply to {argv[0]}"), err
    assert f"it is an option of {owners}" in last, err


def test_a_page_asked_for_keeps_the_early_zygote(tmp_path, monkeypatch):
    """`--html` is grade's option, not a help request: one submission's grading still forks its zygote at the start."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").touch()
    assert forks_zygote(["grade", "a.py", "--html", "x.html"], {"autograder.cli": None})


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["batch", "nowhere"], "sdpa-grade batch: nowhere is not a folder"),
        (["summary", "nowhere"], "sdpa-grade summary: nowhere is not a folder"),
        (["diff", "nowhere", "."], "sdpa-grade diff: nowhere is not a folder"),
    ],
)
def test_each_verbs_messages_name_that_verb(tmp_path, capsys, monkeypatch, argv, said):
    """A folder that is not one is refused by the verb that was run, in its own name (never an older form's)."""
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    assert capsys.readouterr().err.strip() == said
