"""The build turns the reference into the student's stubs, and nothing of the solution leaks."""

from __future__ import annotations

import shutil

import pytest

from autograder.release.build import TEMPLATE, build_template, stale_files
from autograder.release.template import MarkerError, solution_lines, stub_source
from tests.grading_cases import CASES
from tests.helpers import BIN, REFERENCE, ROOT, SUBMISSIONS, TEMPLATE_DIR, run, student_folder

STUDENT_FILES = ["attention.py", "test_attention.py", "conftest.py", "pytest.ini"]


def received_texts() -> dict[str, str]:
    """Every text file a student receives."""
    return {path.name: path.read_text() for path in TEMPLATE_DIR.iterdir() if path.is_file()}


def test_generated_files_are_not_stale():
    """The committed generated files are exactly what sdpa-build writes."""
    assert stale_files(ROOT) == [], "run sdpa-build and commit the result"


def sources_only(folder):
    """A project folder holding only what the build reads: the reference, the handout and its plot, the public tests."""
    for path in (REFERENCE, ROOT / "docs" / "handout.md", ROOT / "docs" / "saturation.svg", TEMPLATE_DIR / "test_attention.py"):
        target = folder / path.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, target)
    return folder


def test_check_reports_a_stale_template(tmp_path):
    """`sdpa-build --check` exits 1 and names the file when the template was edited by hand."""
    sources_only(tmp_path)
    (tmp_path / TEMPLATE).write_text(build_template(ROOT) + "# edited by hand\n")
    result = run([str(BIN / "sdpa-build"), "--check", "--root", str(tmp_path)])
    assert result.returncode == 1
    assert "stale: student_template/attention.py" in result.stdout


def test_build_rewrites_a_stale_template(tmp_path):
    """`sdpa-build` writes the template and the notebook again, and then `--check` passes."""
    sources_only(tmp_path)
    result = run([str(BIN / "sdpa-build"), "--root", str(tmp_path)])
    assert result.returncode == 0, result.stderr
    assert (tmp_path / TEMPLATE).read_text() == build_template(ROOT)
    assert stale_files(tmp_path) == []
    assert run([str(BIN / "sdpa-build"), "--check", "--root", str(tmp_path)]).returncode == 0


def test_build_says_so_when_nothing_changed(tmp_path):
    """A build with nothing to rewrite says the files are up to date, instead of printing nothing."""
    sources_only(tmp_path)
    run([str(BIN / "sdpa-build"), "--root", str(tmp_path)])
    again = run([str(BIN / "sdpa-build"), "--root", str(tmp_path)])
    assert again.returncode == 0 and again.stdout.strip() == "generated files are up to date"


def test_build_help_is_plain_text():
    """`sdpa-build --help` reads as plain text, without reStructuredText markup."""
    result = run([str(BIN / "sdpa-build"), "--help"])
    assert result.returncode == 0 and "``" not in result.stdout


def test_no_solution_line_reaches_the_student():
    """No line written between the solution markers appears in any file of student_template/."""
    lines = solution_lines(REFERENCE.read_text())
    assert len(lines) > 20
    for name, text in received_texts().items():
        leaked = [line for line in lines if line in text]
        assert leaked == [], f"{name} contains solution lines: {leaked}"


def test_leak_detection_catches_a_leak():
    """A stub builder that kept one solution line would be caught by the same comparison."""
    source = REFERENCE.read_text()
    leaky = stub_source(source) + "\n" + solution_lines(source)[0] + "\n"
    assert [line for line in solution_lines(source) if line in leaky]


def test_stub_keeps_signatures_and_docstrings():
    """Outside the solution regions the template is the reference, line for line."""
    source = REFERENCE.read_text()
    template = (TEMPLATE_DIR / "attention.py").read_text()
    for line in source.splitlines():
        if line.strip().startswith(("def ", "class ", '"""', "Args:", "Returns:")):
            assert line in template


@pytest.mark.parametrize(
    "source, problem",
    [
        ("### BEGIN SOLUTION\nx = 1\n", "never closed"),
        ("x = 1\n### END SOLUTION\n", "without"),
        ("### BEGIN SOLUTION\n### BEGIN SOLUTION\n### END SOLUTION\n", "inside another"),
    ],
)
def test_unbalanced_markers_are_refused(source, problem):
    """Broken markers stop the build with the line number, instead of leaking or eating code."""
    with pytest.raises(MarkerError, match=problem):
        stub_source(source)


def test_public_tests_guide_a_student_on_the_untouched_template(tmp_path):
    """In a folder holding only student_template/, every test fails in one line and names the next function."""
    folder = student_folder(tmp_path)
    assert sorted(p.name for p in folder.iterdir()) == sorted(STUDENT_FILES)
    result = run([str(BIN / "python"), "-m", "pytest"], cwd=folder)
    assert result.returncode == 1
    assert "Next: implement attention_scores in attention.py" in result.stdout
    assert "Traceback" not in result.stdout
    lines = [line for line in result.stdout.splitlines() if "is not implemented yet" in line]
    assert len(lines) == 14
    assert "14 failed" in result.stdout


def test_public_tests_pass_on_the_reference(tmp_path):
    """The reference solution passes every public test."""
    folder = student_folder(tmp_path, REFERENCE.read_text())
    result = run([str(BIN / "python"), "-m", "pytest"], cwd=folder)
    assert result.returncode == 0, result.stdout
    assert "14 passed" in result.stdout


def test_public_tests_are_not_the_hidden_suite(tmp_path):
    """A softmax without the max subtraction passes every public test, yet the hidden stability check fails it."""
    overlay = (SUBMISSIONS / "overlays" / "mistake_no_max_subtraction.py").read_text()
    folder = student_folder(tmp_path, REFERENCE.read_text() + "\n" + overlay)
    result = run([str(BIN / "python"), "-m", "pytest"], cwd=folder)
    assert result.returncode == 0, result.stdout
    assert CASES["mistake_no_max_subtraction"][0] == {"softmax_stability"}  # graded in tests/test_grading.py


def test_a_wrong_answer_names_its_test_in_one_line(tmp_path):
    """A real failure (not a stub) is reported with the test's name on its line, and the stubs still guide."""
    overlay = (SUBMISSIONS / "overlays" / "mistake_divide_by_dk.py").read_text()
    folder = student_folder(tmp_path, REFERENCE.read_text() + "\n" + overlay)
    result = run([str(BIN / "python"), "-m", "pytest"], cwd=folder)
    assert result.returncode == 1
    failures = [line for line in result.stdout.splitlines() if " failed: " in line]
    assert failures[0] == (
        "test_scale_scores_by_hand failed: expected [[2.0, -4.0]], got [[1.0, -2.0]];"
        " largest difference 2 (allowed 1.5e-05) at index (0, 1) (test_attention.py:55)"
    )
    assert failures[1].startswith("test_scaled_dot_product_attention_lesson_shapes failed: expected ")
    assert "the largest difference: " in failures[1]
    assert not [line for line in result.stdout.splitlines() if line.startswith(("E ", "    "))]  # nothing but the one lines


@pytest.mark.parametrize("name, test", [
    ("mistake_zero_fill", "test_scaled_dot_product_attention_padded_batch"),
    ("mistake_mha_split_no_transpose", "test_MultiHeadAttention_matches_torch"),
    ("mistake_mha_merge_order", "test_MultiHeadAttention_matches_torch"),
])
def test_public_failures_say_what_differs(tmp_path, name, test):
    """Masking with 0 and the multi-head split and merge mistakes fail a public test whose one line gives expected
    and found values, never a bare `assert tensor(False)`."""
    overlay = (SUBMISSIONS / "overlays" / f"{name}.py").read_text()
    folder = student_folder(tmp_path, REFERENCE.read_text() + "\n" + overlay)
    result = run([str(BIN / "python"), "-m", "pytest"], cwd=folder)
    assert result.returncode == 1
    line = next(line for line in result.stdout.splitlines() if line.startswith(f"{test} failed: "))
    assert "expected " in line and ", got " in line and "tensor(" not in line, line


def test_every_notebook_code_cell_compiles():
    """Every code cell of the source notebook is valid Python (a check's docstring cannot spill out of its comment)."""
    import json

    notebook = json.loads((ROOT / "assignments" / "source" / "sdpa" / "sdpa.ipynb").read_text())
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            compile(source, cell["metadata"].get("nbgrader", {}).get("grade_id", "cell"), "exec")


def test_notebook_text_reads_right():
    """Points are "1 point", not "1 points"; a True/False question's example shows the form, not None."""
    text = (ROOT / "assignments" / "source" / "sdpa" / "sdpa.ipynb").read_text()
    assert "(1 points)" not in text and "(1 point)" in text
    assert "q_mask_polarity = None" not in text and "q_mask_polarity = <True or False>" in text
