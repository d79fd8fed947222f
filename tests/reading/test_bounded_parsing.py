"""Parsing attacks: whatever the trusted process reads from a submission is bounded before it is parsed, and one
notebook never stops the grading of the others.

Each attack below ends as the student's: the submission ungradable with a reason in the student's words, or a failed
check, or a notebook graded while its pasted cell is reported; never a grader error (exit 3), an OverflowError that
makes nbgrader drop the notebook, a grading that takes minutes and gigabytes, or a class that nbgrader stops grading.
Large attacks are built here, never committed.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import sys
from pathlib import Path

import nbformat
import pytest

from autograder.checks.quiz import verdict
from autograder.config import load_settings
from autograder.grade import grade
from autograder.read.handed_in import read_submission
from autograder.read.submission import Ungradable
from autograder.sandbox.student_side import wire
from tests.helpers import BIN, REFERENCE, ROOT, python_steps, run

SETTINGS = load_settings(environ={})
LIMITS = SETTINGS.limits


def _notebook(cells) -> str:
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def _code(source, metadata=None) -> dict:
    return {"cell_type": "code", "metadata": {} if metadata is None else metadata, "source": source, "outputs": []}


REFERENCE_CELL = _code(REFERENCE.read_text())
# name -> (the notebook's text, what the student is told: a phrase of the reason it is not graded)
NOTEBOOKS = {
    "json_100000_deep": (
        '{"cells": [' + "[" * 100_000 + "]" * 100_000 + "]}",
        "levels deep",
    ),
    "metadata_null": (_notebook([REFERENCE_CELL, _code("x = 1") | {"metadata": None}]), "cell 2"),
    "source_holds_an_integer": (_notebook([REFERENCE_CELL, _code(["x = 1\n", 7])]), "cell 2"),
    "json_lists_past_the_bound": (
        _notebook(
            [
                REFERENCE_CELL
                | {
                    "outputs": [
                        {"output_type": "stream", "name": "stdout", "text": [[]] * (LIMITS.notebook_containers + 1)}
                    ]
                }
            ]
        ),
        f"holds more than {LIMITS.notebook_containers} JSON lists and objects",
    ),
    "cells_not_a_list": ('{"cells": {"0": 1}, "metadata": {}, "nbformat": 4}', "its cells are not a list"),
    "nbgrader_metadata_a_list": (
        _notebook([REFERENCE_CELL, _code("x = 1", metadata={"nbgrader": [1, 2]})]),
        "cell 2",
    ),
}


def _graded(path: Path, settings=SETTINGS):
    grading = grade(path, settings)
    assert grading.grader_error == "", grading.grader_error
    return grading


@pytest.mark.parametrize("name", sorted(NOTEBOOKS))
def test_a_misshapen_notebook_is_ungradable_not_a_grader_error(name, tmp_path):
    """Deep JSON, null metadata, an integer among the source lines, ...: checked before (or while) the notebook is
    read, each refused with the reason in the student's words (a RecursionError, AttributeError or TypeError before)."""
    text, phrase = NOTEBOOKS[name]
    path = tmp_path / "submission.ipynb"
    path.write_text(text)
    with pytest.raises(Ungradable) as refused:
        read_submission(path, tmp_path, LIMITS)
    assert str(refused.value).startswith("the notebook submission.ipynb "), refused.value
    assert phrase in str(refused.value), refused.value


@pytest.mark.timeout(120)
def test_a_grading_of_a_notebook_too_deep_to_decode_ends_with_a_result(tmp_path):
    """The 100,000-deep notebook graded whole (exit 3 before): ungradable, every check failed at loading, score 0."""
    path = tmp_path / "submission.ipynb"
    path.write_text(NOTEBOOKS["json_100000_deep"][0])
    grading = _graded(path)
    assert f"nests more than {LIMITS.notebook_depth} levels deep" in grading.ungradable, grading.ungradable
    assert grading.result["score"] == 0


def test_a_notebook_over_its_size_bound_is_refused_before_it_is_read(tmp_path):
    """A notebook whose cells (outputs left out) are larger than ``limits.notebook_mb`` is refused by their size, and
    a file larger than ``limits.notebook_file_mb`` before it is read (settings, here made 1 and 2 MiB)."""
    config = tmp_path / "small.toml"
    config.write_text("[limits]\nnotebook_mb = 1\nnotebook_file_mb = 2\n")
    path = tmp_path / "submission.ipynb"
    path.write_text(_notebook([{"cell_type": "markdown", "metadata": {}, "source": "x" * (1 << 20)}]))
    with pytest.raises(Ungradable) as refused:
        read_submission(path, tmp_path, load_settings(config).limits)
    assert str(refused.value) == (
        "the notebook submission.ipynb holds 1.0 MiB; at most 1.0 MiB of a notebook's cells is read: remove the data"
        " (or anything large) from its cells"
    )
    path.write_text(_notebook([REFERENCE_CELL | {"outputs": [{"output_type": "stream", "text": "x" * (2 << 20)}]}]))
    with pytest.raises(Ungradable) as refused:
        read_submission(path, tmp_path, load_settings(config).limits)
    assert str(refused.value).startswith("the notebook submission.ipynb is 2.0 MiB; at most 2 MiB of a notebook file")


def _printed(megabytes: float) -> dict:
    """A stream output as Jupyter saves a long print: a list of lines."""
    line = "tensor([[0.1234, 0.5678, 0.9012, 0.3456]]) " * 2 + "\n"
    return {"output_type": "stream", "name": "stdout", "text": [line] * int(megabytes * (1 << 20) / len(line))}


def test_outputs_never_count_against_the_notebooks_bound(tmp_path):
    """A cell whose printed output is larger than ``limits.notebook_mb`` (here 1 MiB) is read as without it: outputs
    and a markdown cell's pasted images are dropped before the bound and before anything is decoded, and the code the
    worker loads is the same; what the cells hold besides outputs still counts."""
    config = tmp_path / "small.toml"
    config.write_text("[limits]\nnotebook_mb = 1\n")
    limits = load_settings(config).limits
    bare = tmp_path / "bare.ipynb"
    bare.write_text(_notebook([REFERENCE_CELL]))
    printed = tmp_path / "printed.ipynb"
    image = {"image.png": {"image/png": "A" * (2 << 20)}}
    markdown = {"cell_type": "markdown", "metadata": {}, "source": "![x](attachment:image.png)", "attachments": image}
    printed.write_text(_notebook([REFERENCE_CELL | {"outputs": [_printed(3), {"outputs": [[[]]]}]}, markdown]))
    assert printed.stat().st_size > 5 << 20
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    code = read_submission(bare, tmp_path / "a", limits).source.read_text()
    assert read_submission(printed, tmp_path / "b", limits).source.read_text() == code
    # "outputs" elsewhere (a cell's metadata, the notebook's) is kept, and counted
    metadata = _code("x = 1", metadata={"outputs": "y" * (1 << 20)})
    printed.write_text(_notebook([REFERENCE_CELL, metadata]))
    with pytest.raises(Ungradable, match="holds 1.0 MiB"):
        read_submission(printed, tmp_path / "b", limits)


def test_dropping_outputs_is_linear_whatever_they_hold():
    """The scan that drops outputs skips strings whole and counts runs of brackets at once: outputs of any shape (one
    string, escapes, short strings, nested or side-by-side lists) cost steps in proportion to their size (8 times the
    outputs, at most about 8 times the steps, counted: tests/helpers.py ``python_steps``), 16 MiB of them are dropped
    whole, and lists past ``notebook_containers`` are refused as they are counted."""
    from autograder.read import bounded

    shapes = {
        "string": lambda size: '["' + "x" * size + '"]',
        "escapes": lambda size: '["' + '\\"' * (size // 2) + '"]',
        "strings": lambda size: "[" + '"",' * (size // 3) + '""]',
        "nested": lambda size: "[" * (size // 2) + "]" * (size // 2),
        "side_by_side": lambda size: "[" + "[]," * (size // 3) + "[]]",
    }

    def dropped(outputs: str, containers: int = LIMITS.notebook_containers):
        text = '{"cells": [{"cell_type": "code", "source": "x = 1", "outputs": ' + outputs + "}]}"
        try:
            return bounded.without_outputs(text, containers)
        except bounded.Refused as refused:
            return refused

    def whole(outputs: str):
        return dropped(outputs, 1 << 30)  # the whole scan, however many lists

    for name, make in shapes.items():
        outputs = make(16 << 20)
        found = dropped(outputs)
        if isinstance(found, bounded.Refused):
            assert name in ("nested", "side_by_side"), (name, found)
        else:
            kept, count = found
            assert json.loads(kept)["cells"][0]["outputs"] == [] and count == len(outputs) - 2, name
        small, large = (python_steps(whole, make(size)) for size in (1 << 12, 1 << 15))
        assert large / small < 10, f"{name}: 8x the outputs took {large / small:.1f}x the steps"


@pytest.mark.timeout(120)
def test_a_4_mb_literal_in_attention_py_is_ungradable_by_its_size(tmp_path):
    """A 4 MB list literal (the static scans parsed it three times a check: 91 s, 2.2 GiB) is over
    ``limits.source_kb`` and refused before anything parses it; in a notebook's cells too."""
    literal = "_big = [" + "0, " * ((4 << 20) // 3) + "]\n"
    path = tmp_path / "attention.py"
    path.write_text(REFERENCE.read_text() + literal)
    grading = _graded(path)
    assert f"at most {LIMITS.source_kb} KiB of code is graded" in grading.ungradable, grading.ungradable
    assert grading.result["score"] == 0
    notebook = tmp_path / "submission.ipynb"
    notebook.write_text(_notebook([REFERENCE_CELL, _code(literal)]))
    with pytest.raises(Ungradable) as refused:
        read_submission(notebook, tmp_path, LIMITS)
    assert f"its code cells hold 4.0 MiB; at most {LIMITS.source_kb} KiB of code is graded" in str(refused.value)


# Runs the three static scans as the two integrity checks run them on one source, and counts how many times the
# source (or a string inside it) is compiled: Python's own audit event for compile(), which ast.parse raises.
COUNT_PARSES = """
import sys
from autograder.checks.integrity import dynamic_reach, fused_uses, tampering
source = open(sys.argv[1]).read()
forms, parses = (source, source.encode()), []
sys.addaudithook(lambda event, args: parses.append(1) if event == "compile" and args[0] in forms else None)
for _ in ("integrity_sdpa", "integrity_mha"):
    tampering(source), fused_uses(source), dynamic_reach(source)
print(len(parses))
"""


@pytest.mark.timeout(120)
def test_the_static_scans_parse_a_source_once(tmp_path):
    """The three scans of the two integrity checks share one syntax tree of the source: one parse, not six."""
    path = tmp_path / "attention.py"
    path.write_text(REFERENCE.read_text() + "_big = [" + "0, " * 20_000 + "]\n")
    done = run([sys.executable, "-c", COUNT_PARSES, str(path)], cwd=ROOT, timeout=100)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["1"]


def test_a_quiz_answer_too_large_for_a_float_is_a_wrong_answer():
    """``q_variance = 1000...0`` (a legal integer of 401 digits): the OverflowError that made nbgrader drop the
    notebook is now the wrong answer it is, with the usual feedback."""
    message = verdict("q_variance", "q_variance = 1" + "0" * 400)
    assert message.endswith("is not the expected answer (a number); reread 'Why scale?' in the handout"), message
    assert verdict("q_variance", "q_variance = 64") == ""
    assert verdict("q_variance", "q_variance = 64.0") == ""


@pytest.mark.parametrize(
    "answer",
    ["-" * 6000 + "64", "(" * 3000 + "64" + ")" * 3000, "[" * 3000 + "]" * 3000, "not " * 2000 + "1", "~" * 9000],
)
def test_a_quiz_answer_nested_past_the_parser_is_the_students_message(answer):
    """``q_variance = ------...64`` (6 KB): the parser's own depth limit (its MemoryError, which stopped the grading
    process: a grader error on every path) is the student's message, the answer's usual form shown."""
    message = verdict("q_variance", f"q_variance = {answer}")
    assert message.endswith("write it as `q_variance = 0`") or message.startswith("set q_variance to a value"), message


@pytest.mark.timeout(120)
def test_quiz_answers_from_random_bytes_get_a_message_never_an_exception():
    """Random and adversarial text in every answer cell, 300 cells a question, seeded: each a verdict (a string),
    never an exception out of the trusted reader."""
    import random

    from autograder.checks.quiz import QUESTIONS

    pieces = ["(", ")", "[", "]", "{", "}", "-", "~", "not ", "'", '"', "\\", "\n", "=", "64", "1e308", "0x", "*", ",",
              "lambda: ", "q_variance", " ", "#", ":", "\x00", "\u212a", "\ud800", "..."]  # fmt: skip
    draw = random.Random(54)
    for question in QUESTIONS:
        for _ in range(300):
            text = "".join(draw.choice(pieces) for _ in range(draw.randrange(1, 400)))
            source = text if draw.random() < 0.3 else f"{question.name} = {text}"
            assert isinstance(verdict(question.name, source), str), source


@pytest.mark.parametrize(
    "marker",
    [
        {"$tensor": 0, "dtype": ["float32"], "shape": [1]},
        {"$tensor": 0, "dtype": {"a": 1}, "shape": [1]},
        {"$tensor": [0], "dtype": "float32", "shape": [1]},
        {"$float": {"nan": 1}},
        {"$tuple": {"a": 1}},
    ],
)
def test_a_wire_marker_of_an_unexpected_type_is_a_wire_error(marker):
    """A list (or object) where the reader looks a name up: the student's WireError, never a TypeError."""
    header = json.dumps({"body": {"ok": True, "value": marker}, "sizes": [4]}).encode()
    with pytest.raises(wire.WireError):
        wire.decode(header, lambda size: b"\0" * size)


# The sandboxed parsing attack (wire_unhashable_reply: a wire value of an unexpected type) is graded with the other
# hostile submissions, in tests/sandbox/test_hostile.py.


# --- nbgrader: one notebook never stops the class ---------------------------------------------------------------------


def _nbgrader(*args, cwd, env, check=True):
    done = run([str(BIN / "nbgrader"), *args], cwd=cwd, env=env, timeout=600)
    if check:
        assert done.returncode == 0, f"nbgrader {' '.join(args)}:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_pasted_solution_cell_does_not_stop_the_class(tmp_path):
    """A class of two: the first pasted a copy of a solution cell (Jupyter copies its nbgrader grade id) and answered
    the variance question with a 401-digit integer; the second is honest. nbgrader used to stop the class at the first
    (exit 1: "Outdated schema version"), and never graded the second. Now the first is graded, its pasted copy reported
    in the log and its code graded as it runs, and the second is graded too."""
    from nbgrader.api import Gradebook

    from tests.helpers import answered

    course = tmp_path / "course"
    shutil.copytree(
        ROOT / "assignments",
        course,
        ignore=shutil.ignore_patterns("release", "submitted", "autograded", "feedback", "exchange", "gradebook.db"),
    )
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    _nbgrader("generate_assignment", "sdpa", "--force", cwd=course, env=env)
    source = nbformat.read(course / "source" / "sdpa" / "sdpa.ipynb", as_version=4)
    release = nbformat.read(course / "release" / "sdpa" / "sdpa.ipynb", as_version=4)
    pasted = answered(release, source, {"q_variance": "q_variance = 1" + "0" * 400})
    index = next(
        i for i, c in enumerate(pasted.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == "scale_scores"
    )
    copied = copy.deepcopy(pasted.cells[index])
    copied["id"] = "pasted-copy"
    pasted.cells.insert(index + 1, copied)
    for student, notebook in (("a_pasted", pasted), ("b_honest", release)):
        folder = course / "submitted" / student / "sdpa"
        folder.mkdir(parents=True)
        nbformat.write(notebook, folder / "sdpa.ipynb")
    done = _nbgrader("autograde", "sdpa", "--force", cwd=course, env=env, check=False)
    log = done.stdout + done.stderr
    for student in ("a_pasted", "b_honest"):
        assert (course / "autograded" / student / "sdpa" / "sdpa.ipynb").exists(), (
            f"{student} not graded:\n{log[-3000:]}"
        )
    assert "a_pasted" in log and "'scale_scores' twice" in log, log[-3000:]
    assert done.returncode == 0, log[-3000:]
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "sdpa-course") as gradebook:
        first = gradebook.find_submission_notebook("sdpa", "sdpa", "a_pasted")
        second = gradebook.find_submission_notebook("sdpa", "sdpa", "b_honest")
        lost = {grade.name: grade.max_score - grade.score for grade in first.grades if grade.score != grade.max_score}
        assert set(lost) == {"check_q_variance"}, lost  # graded in full but for the wrong answer
        assert all(grade.score is not None for grade in second.grades)


def _nbgrader_cell(grade_id: str, **meta) -> dict:
    nbgrader = {"grade_id": grade_id, "solution": True, "grade": False, "locked": False, "schema_version": 3}
    return _code(f"{grade_id} = 1") | {"metadata": {"nbgrader": nbgrader | meta}}


def test_deduplicate_ids_keeps_the_last_copy_and_refuses_a_corrupt_notebook_alone():
    """The sanitizing step in place of nbgrader's: the earlier copy of a grade id becomes plain code (nbgrader's left
    it an empty dict, which its schema check refused as outdated, stopping the class); nbgrader metadata of another
    schema, or a cell of the wrong shape, is a plain error for that notebook (nbgrader reports it and goes on)."""
    from nbgrader.nbgraderformat.common import SchemaMismatchError

    from autograder.nbgrader_path.autograde import DeduplicateIds, NotebookRefused

    resources = {"nbgrader": {"student": "a_pasted"}}
    step = DeduplicateIds()
    notebook = nbformat.from_dict(json.loads(_notebook([_nbgrader_cell("answer"), _nbgrader_cell("answer")])))
    notebook.cells.append(nbformat.from_dict(_code("x = 2") | {"metadata": {"nbgrader": {}}}))
    cells = step.preprocess(notebook, resources)[0].cells
    assert ["nbgrader" in cell.metadata for cell in cells] == [False, True, False]
    assert [cell.source for cell in cells] == ["answer = 1", "answer = 1", "x = 2"]
    for cell in (_nbgrader_cell("answer", schema_version=2), _code("x = 1") | {"metadata": None}):
        corrupt = nbformat.from_dict(json.loads(_notebook([_nbgrader_cell("other"), cell])))
        with pytest.raises(NotebookRefused, match="'a_pasted' is refused: cell 2 has") as refused:
            step.preprocess(corrupt, resources)
        assert not isinstance(refused.value, SchemaMismatchError)
