"""The tiny example's weights (checks/pictures.py) and their block grid (render/text.py), in the feedback."""

from __future__ import annotations

import json

import pytest

from autograder.checks.catalogue import catalogue
from autograder.checks.pictures import picture, tiny_example
from autograder.checks.student import Student
from autograder.render.text import LEGEND, block_grid, cell, with_picture
from tests.helpers import BIN, REFERENCE, SUBMISSIONS, run
from tests.in_process import InProcess


def student_with(overlay: str | None = None) -> Student:
    """The reference, with one mistake's overlay appended, run in this process through the same proxy."""
    source = REFERENCE.read_text()
    if overlay:
        source += "\n" + (SUBMISSIONS / "overlays" / f"{overlay}.py").read_text()
    namespace: dict = {}
    exec(compile(source, "attention.py", "exec"), namespace)
    return Student(InProcess(namespace), timeout=10)


def test_tiny_examples_are_fixed_and_tiny():
    """Every example is the same on every call (a constant seed), and at most 6 x 6."""
    for name in ("plain", "padding", "causal"):
        first, second = tiny_example(name), tiny_example(name)
        assert first.scores.equal(second.scores)
        assert first.scores.shape[-2] <= 6 and first.scores.shape[-1] <= 6
    assert tiny_example("causal").scores.shape[-2:] == (4, 6)  # rectangular: a bottom-right triangle shows


def test_no_picture_when_the_weights_are_right():
    """The reference's weights match on every example: nothing to show."""
    student = student_with()
    pictured = {(entry.function, entry.picture) for entry in catalogue() if entry.picture}
    assert len(pictured) == 6
    for function, example in pictured:
        assert picture(student, function, example) is None


@pytest.mark.parametrize(
    ("overlay", "function", "example"),
    [
        ("mistake_causal_flipped", "causal_mask", "causal"),
        ("mistake_causal_bottom_right", "scaled_dot_product_attention", "causal"),
        ("mistake_mask_inverted", "masked_softmax", "padding"),
        ("mistake_query_axis", "masked_softmax", "plain"),
        ("mistake_nan_rows", "masked_softmax", "padding"),
        ("mistake_zero_fill", "scaled_dot_product_attention", "padding"),
    ],
)
def test_a_mistake_gives_a_picture_of_the_tiny_example_only(overlay, function, example):
    """Expected and got differ, both have the tiny example's shape, and the picture is plain JSON."""
    shown = picture(student_with(overlay), function, example)
    assert shown is not None
    assert shown["example"] == example and shown["function"] == function
    assert len(shown["expected"]) == len(shown["got"]) == shown["queries"] <= 6
    assert all(len(row) == shown["keys"] <= 6 for row in shown["expected"] + shown["got"])
    assert shown["expected"] != shown["got"]
    assert json.loads(json.dumps(shown, allow_nan=False)) == shown  # NaN travels as null, never as a bare NaN


def test_nan_weights_travel_as_null():
    """A NaN weight is None in the picture, drawn as '?'."""
    shown = picture(student_with("mistake_nan_rows"), "masked_softmax", "padding")
    assert shown["got"][-1] == [None] * 6
    grid = block_grid(shown)
    assert "?" in grid.split(LEGEND)[0].splitlines()[-1]  # the last query's row
    assert max(len(line) for line in grid.splitlines()) <= 100  # the longest example's description fits too


def test_a_function_that_raises_gives_no_picture():
    """The template's stubs raise NotImplementedError: no picture, no error."""
    namespace: dict = {}
    exec(
        compile((REFERENCE.parent.parent / "student_template" / "attention.py").read_text(), "attention.py", "exec"),
        namespace,
    )
    assert picture(Student(InProcess(namespace), timeout=10), "masked_softmax", "padding") is None


def test_cells_mark_masked_keys_and_leaks():
    """A key the query may attend to is its shade twice; a masked key is a dot, then the weight it leaked."""
    assert cell(1.0, True) == "██"
    assert cell(0.0, True) == "  "
    assert cell(0.0, False) == "··"
    assert cell(0.3, False) == "·▒"
    assert cell(None, True) == "??"


def test_block_grid_shows_expected_beside_got_with_a_legend():
    """One line per query holds both grids; the header names them; the legend says what the marks mean."""
    shown = {"example": "causal", "function": "causal_mask", "queries": 2, "keys": 3,
             "mask": [[True, False, False], [True, True, False]],
             "expected": [[1.0, 0.0, 0.0], [0.4, 0.6, 0.0]], "got": [[0.2, 0.3, 0.5], [0.4, 0.6, 0.0]]}  # fmt: skip
    text = block_grid(shown)
    lines = text.splitlines()
    assert "2 queries x 3 keys" in lines[0]
    assert "expected" in lines[1] and "yours" in lines[1] and lines[1].index("expected") < lines[1].index("yours")
    assert lines[3].endswith("│██····│   │░░·▒·▓│")
    assert lines[4].endswith("│▒▒▓▓··│   │▒▒▓▓··│")
    assert text.endswith(LEGEND) and "masked" in LEGEND
    assert max(len(line) for line in lines) <= 100
    assert with_picture("wrong.", shown) == f"wrong.\n{text}"
    assert with_picture("wrong.", None) == "wrong."


@pytest.mark.slow
def test_feedback_of_a_graded_mistake_holds_the_picture(tmp_path):
    """sdpa-grade on a flipped causal mask: the picture is a field of the failed check,
    and its grid is in the output."""
    submission = tmp_path / "attention.py"
    submission.write_text(
        REFERENCE.read_text() + "\n" + (SUBMISSIONS / "overlays" / "mistake_causal_flipped.py").read_text()
    )
    out = tmp_path / "results.json"
    result = run([str(BIN / "sdpa-grade"), str(submission), "--json", str(out)])
    assert result.returncode == 0, result.stderr
    tests = {test["extra_data"]["check"]: test for test in json.loads(out.read_text())["tests"]}
    pictured = {check for check, test in tests.items() if "picture" in test["extra_data"]}
    assert pictured == {"causal_square", "sdpa_causal"}  # one per function, on its first failed check
    assert tests["causal_square"]["output"].endswith(block_grid(tests["causal_square"]["extra_data"]["picture"]))
    assert all(isinstance(test["extra_data"]["seconds"], float) for test in tests.values())
    assert "yours" in result.stdout and all(line in result.stdout for line in LEGEND.splitlines())


def test_nbgrader_feedback_holds_the_block_grid():
    """A failed hidden cell's output (nbgrader's path): the message, its likely cause on a line of its own, then the
    picture's rows kept whole; its one-line text is results.json's output."""
    from autograder.cell_feedback import WIDTH, failure_output
    from autograder.plugin import Outcome
    from autograder.render.text import output_text
    from autograder.scoring import Scored

    shown = picture(student_with("mistake_causal_flipped"), "causal_mask", "causal")
    long = "causal_mask(9): 72 of 81 entries differ; " + "first at index (0, 1) of shape (9, 9) " * 3
    outcome = Outcome(
        "causal_square", "causal_mask", "causal", "failed", f"{long}.", cause="the triangle is flipped", picture=shown
    )
    output = failure_output("causal_square", Scored(outcome, 0.0, 1.0, outcome.message))
    grid = block_grid(shown).splitlines()
    assert output.evalue == f"causal_square: {long}. Likely cause: the triangle is flipped.\n" + "\n".join(grid)
    assert output.evalue == f"causal_square: {output_text(Scored(outcome, 0.0, 1.0, outcome.message))}"
    lines = output.traceback
    assert lines[0] == "causal_square: failed" and lines[1].startswith("  causal_mask(9)") and len(lines[1]) <= WIDTH
    cause = lines.index("  Likely cause: the triangle is flipped.")
    assert all(line.startswith("    ") for line in lines[2:cause])  # the long message, wrapped
    assert lines[cause + 1 :] == [f"  {row}" for row in grid]  # the grid's rows, whole
