"""The public tests' "Next:" line (student_template/conftest.py): it counts only the functions whose own tests fail,
not those that fail only through a function they build on."""

from __future__ import annotations

import importlib.util

import pytest

from tests.helpers import BIN, REFERENCE, ROOT, TEMPLATE_DIR, run, student_folder

pytestmark = pytest.mark.timeout(120)


def _conftest():
    spec = importlib.util.spec_from_file_location("student_conftest", TEMPLATE_DIR / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_composition_next_follows_is_the_graders():
    """What the attention builds on, in the public tests' conftest, is what the grader's substitution lets stand in
    (checks/substitution.CALLS), and the module builds on the attention: one composition, as carried causes follow."""
    from autograder.checks.substitution import CALLS

    builds = _conftest().BUILDS_ON
    assert builds == {
        "scaled_dot_product_attention": CALLS["scaled_dot_product_attention"],
        "MultiHeadAttention": ("scaled_dot_product_attention",),
    }


def test_next_counts_one_function_when_one_function_is_wrong(tmp_path):
    """scale_scores divides by d_k, everything else is right: the attention's and the module's public tests fail
    too, through it; "Next:" names scale_scores and counts 1 function still to fix, not 3."""
    source = REFERENCE.read_text().replace("return scores / math.sqrt(d_k)", "return scores / d_k")
    assert source != REFERENCE.read_text()
    folder = student_folder(tmp_path, source)
    result = run([str(BIN / "python"), "-m", "pytest", "-p", "no:cacheprovider"], cwd=folder, timeout=180)
    assert result.returncode == 1, result.stdout[-2000:]
    assert "test_scaled_dot_product_attention" in result.stdout  # it fails too, through scale_scores
    [next_line] = [line for line in result.stdout.splitlines() if line.startswith("Next:")]
    assert next_line.startswith("Next: fix scale_scores in attention.py"), next_line
    assert "(1 function(s) still to fix" in next_line, next_line


def test_next_counts_every_stub_of_the_untouched_template(tmp_path):
    """The untouched template: every function is still to write, the attention and the module included."""
    from autograder.assignment.composition import functions
    from autograder.release.build import reference_source

    result = run([str(BIN / "python"), "-m", "pytest", "-p", "no:cacheprovider"], cwd=student_folder(tmp_path))
    [next_line] = [line for line in result.stdout.splitlines() if line.startswith("Next:")]
    count = len(functions(reference_source(ROOT)))  # the functions handed out: the default settings' parts
    expected = f"Next: implement attention_scores in attention.py ({count} function(s) still to write)"
    assert next_line == expected


@pytest.mark.parametrize(
    ("broken", "below", "said"),
    [
        ("    x = 1\n        y = 2\n", 2, "IndentationError: unexpected indent"),
        ("    return scores /\n", 1, "SyntaxError: invalid syntax"),
    ],
)
def test_a_file_python_cannot_read_is_one_line_and_next_points_to_it(tmp_path, broken, below, said):
    """attention.py that does not parse: one line (the file's line and what Python said), no traceback, and "Next:"
    points to that line."""
    lines = REFERENCE.read_text().splitlines(keepends=True)
    at = next(n for n, line in enumerate(lines) if line.startswith("def scale_scores")) + 1
    folder = student_folder(tmp_path, "".join(lines[:at]) + broken + "".join(lines[at:]))
    result = run([str(BIN / "python"), "-m", "pytest", "-p", "no:cacheprovider"], cwd=folder, timeout=180)
    assert result.returncode == 2, result.stdout[-2000:]
    where = f"attention.py, line {at + below}: {said}"  # ``below`` the def line, counted from 1
    assert f"{where} (Python cannot read the file, so no test can import it)" in result.stdout, result.stdout
    assert f"Next: fix {where}" in result.stdout.splitlines(), result.stdout
    assert "Traceback" not in result.stdout and "_pytest" not in result.stdout, result.stdout
