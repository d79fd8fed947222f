"""The tiny example's weights (checks/pictures.py) and their block grid (render/text.py), in the feedback."""

from __future__ import annotations

import importlib
import json

import pytest

from autograder.assignment.catalogue import catalogue
from autograder.checks.cases import Draw
from autograder.checks.expect import CheckFailure
from autograder.checks.pictures import picture, tiny_example
from autograder.checks.student import Student
from autograder.config import load_settings
from autograder.render.text import LEGEND, block_grid, cell, got_weight, with_picture
from tests.helpers import BIN, REFERENCE, run, with_overlay
from tests.in_process import InProcess

SETTINGS = load_settings()
TOLERANCE = SETTINGS.tolerance  # what the checks allow: the pictures draw from the same rule


def student_with(overlay: str | None = None) -> Student:
    """The reference, with one mistake's overlay appended, run in this process through the same proxy."""
    source = with_overlay(overlay)
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
        assert picture(student, function, example, TOLERANCE) is None


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
    shown = picture(student_with(overlay), function, example, TOLERANCE)
    assert shown is not None
    assert shown["example"] == example and shown["function"] == function
    assert len(shown["expected"]) == len(shown["got"]) == shown["queries"] <= 6
    assert all(len(row) == shown["keys"] <= 6 for row in shown["expected"] + shown["got"])
    assert shown["expected"] != shown["got"]
    assert json.loads(json.dumps(shown, allow_nan=False)) == shown  # NaN travels as null, never as a bare NaN


def test_nan_weights_travel_as_null():
    """A NaN weight is None in the picture, drawn as '?'."""
    shown = picture(student_with("mistake_nan_rows"), "masked_softmax", "padding", TOLERANCE)
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
    assert picture(Student(InProcess(namespace), timeout=10), "masked_softmax", "padding", TOLERANCE) is None


def leaking(leak: float, uniform_empty_rows: bool = False) -> Student:
    """The reference's masked_softmax with ``leak`` added on every masked key; with ``uniform_empty_rows``, rows with
    no allowed key get uniform weights too (a -1e6 fill), so the tiny padding example differs in its last row."""
    namespace: dict = {}
    exec(compile(REFERENCE.read_text(), "attention.py", "exec"), namespace)
    reference = namespace["masked_softmax"]

    def masked_softmax(scores, mask=None):
        weights = reference(scores, mask)
        if mask is None:
            return weights
        weights = weights + leak * ~mask
        if uniform_empty_rows:
            empty = ~mask.any(dim=-1, keepdim=True)
            weights = weights.masked_fill(empty, 1.0 / scores.size(-1))
        return weights

    namespace["masked_softmax"] = masked_softmax
    return Student(InProcess(namespace), timeout=10)


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("leak", "beyond"), [(1e-42, False), (0.01, True)])
def test_a_masked_key_is_drawn_as_weight_only_beyond_what_the_check_allows(monkeypatch, leak, beyond):
    """A weight of 1e-42 on masked keys passes the masking check and is drawn as masked (no "got weight" mark, in the
    grid or the image); a leak of 0.01 fails it and is drawn as weight. The picture's bound is the check's own."""
    softmax_checks = importlib.import_module("autograder.checks.check_2_softmax")
    try:
        softmax_checks.test_softmax_masked(leaking(leak), Draw(1), SETTINGS)
        passed = True
    except CheckFailure:
        passed = False
    assert passed is not beyond
    alone = picture(leaking(leak), "masked_softmax", "padding", TOLERANCE)
    assert (alone is not None) is beyond  # within what the check allows, there is nothing to show
    shown = picture(leaking(leak, uniform_empty_rows=True), "masked_softmax", "padding", TOLERANCE)
    assert shown is not None  # the last query (no allowed key) differs: uniform weights
    assert shown["got"][0][4] > 0  # the weight is there, in the numbers
    rows = block_grid(shown).split(LEGEND)[0].splitlines()[3:]  # one per query: expected, then yours
    for i in range(5):  # the queries with keys 4 and 5 masked
        assert [got_weight(shown, i, j) for j in range(6)] == [False] * 4 + [beyond] * 2
        assert rows[i].endswith("·░·░│" if beyond else "····│")
    assert all(got_weight(shown, 5, j) for j in range(6))  # the uniform row: weight on every masked key


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
def test_feedback_of_a_graded_mistake_holds_the_picture(overlay, tmp_path):
    """sdpa-grade grade on a flipped causal mask: the picture is a field of the failed check,
    and its grid is in the output."""
    submission = overlay("mistake_causal_flipped")
    out = tmp_path / "results.json"
    result = run([str(BIN / "sdpa-grade"), "grade", str(submission), "--json", str(out)])
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
    from autograder.nbgrader_path.cell_feedback import WIDTH, failure_output
    from autograder.plugin import Outcome
    from autograder.render.text import output_text
    from autograder.scoring import Scored

    shown = picture(student_with("mistake_causal_flipped"), "causal_mask", "causal", TOLERANCE)
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
