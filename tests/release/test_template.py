"""The build turns the reference into the student's stubs, and nothing of the solution leaks."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from autograder.assignment.catalogue import catalogue
from autograder.release.build import (
    GRADING_DOC,
    TEMPLATE,
    build_template,
    checks_table,
    reference_source,
    stale_files,
)
from autograder.release.template import MarkerError, solution_lines, stub_source
from tests.grading_cases import CASES
from tests.helpers import BIN, REFERENCE, ROOT, SUBMISSIONS, TEMPLATE_DIR, points, run, sources_only, student_folder

STUDENT_FILES = [
    "attention.py",
    "test_attention.py",
    "conftest.py",
    "pytest.ini",
    "requirements.txt",
    "handout.md",
    "saturation.svg",
]


def received_texts() -> dict[str, str]:
    """Every text file a student receives."""
    return {path.name: path.read_text() for path in TEMPLATE_DIR.iterdir() if path.is_file()}


def test_generated_files_are_not_stale():
    """The committed generated files are exactly what sdpa-build writes."""
    assert stale_files(ROOT) == [], "run sdpa-build and commit the result"


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


def test_the_table_of_checks_in_grading_md_is_written_by_the_build(tmp_path):
    """docs/grading.md's table has one row per check, from its marker and docstring with the settings' points; a row
    edited by hand is stale (--check exits 1 naming the doc) and the build writes it back; a doc without the table's
    markers is refused with exit 2, saying which lines it needs."""
    rows = checks_table().splitlines()[2:]
    assert [row.split(" | ")[0].removeprefix("| ") for row in rows] == [entry.check for entry in catalogue()]
    sources_only(tmp_path)
    doc = tmp_path / GRADING_DOC
    row = f"| scale_values | scale_scores | values | {points('scale_values'):g} | "
    assert row in doc.read_text()
    doc.write_text(
        doc.read_text().replace(row, f"| scale_values | scale_scores | values | {points('scale_values') + 1:g} | ")
    )
    stale = run([str(BIN / "sdpa-build"), "--check", "--root", str(tmp_path)])
    assert stale.returncode == 1 and "stale: docs/grading.md" in stale.stdout, stale.stdout
    assert run([str(BIN / "sdpa-build"), "--root", str(tmp_path)]).returncode == 0
    assert row in doc.read_text() and doc.read_text() == (ROOT / GRADING_DOC).read_text()
    doc.write_text("# Grading policy\n")
    refused = run([str(BIN / "sdpa-build"), "--check", "--root", str(tmp_path)])
    assert refused.returncode == 2 and 'docs/grading.md must hold the line "<!-- the checks' in refused.stderr


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
    """Outside the solution regions the template is the reference (its functions the default settings hand out), line
    for line."""
    source = reference_source(ROOT)
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


def public_tests() -> int:
    """How many public tests the template holds (its test functions), counted, never written by hand."""
    tree = ast.parse((TEMPLATE_DIR / "test_attention.py").read_text())
    return sum(isinstance(node, ast.FunctionDef) and node.name.startswith("test_") for node in tree.body)


def test_public_tests_guide_a_student_on_the_untouched_template(tmp_path):
    """In a folder holding only student_template/, every test fails in one line and names the next function."""
    folder = student_folder(tmp_path)
    assert sorted(p.name for p in folder.iterdir()) == sorted(STUDENT_FILES)
    result = run([str(BIN / "python"), "-m", "pytest"], cwd=folder)
    assert result.returncode == 1
    assert "Next: implement attention_scores in attention.py" in result.stdout
    assert "Traceback" not in result.stdout
    lines = [line for line in result.stdout.splitlines() if "is not implemented yet" in line]
    assert len(lines) == public_tests()
    assert f"{public_tests()} failed" in result.stdout


def test_public_tests_pass_on_the_reference(tmp_path):
    """The reference solution passes every public test."""
    folder = student_folder(tmp_path, REFERENCE.read_text())
    result = run([str(BIN / "python"), "-m", "pytest"], cwd=folder)
    assert result.returncode == 0, result.stdout
    assert f"{public_tests()} passed" in result.stdout


def test_public_tests_are_not_the_hidden_suite(tmp_path):
    """A softmax without the max subtraction passes every public test, yet the hidden stability check fails it."""
    overlay = (SUBMISSIONS / "overlays" / "mistake_no_max_subtraction.py").read_text()
    folder = student_folder(tmp_path, REFERENCE.read_text() + "\n" + overlay)
    result = run([str(BIN / "python"), "-m", "pytest"], cwd=folder)
    assert result.returncode == 0, result.stdout
    assert CASES["mistake_no_max_subtraction"][0] == {"softmax_stability"}  # graded in tests/grading/test_grading.py


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
    assert not [
        line for line in result.stdout.splitlines() if line.startswith(("E ", "    "))
    ]  # nothing but the one lines


@pytest.mark.parametrize(
    "name, test",
    [
        ("mistake_zero_fill", "test_scaled_dot_product_attention_padded_batch"),
        ("mistake_mha_split_no_transpose", "test_MultiHeadAttention_matches_torch"),
        ("mistake_mha_merge_order", "test_MultiHeadAttention_matches_torch"),
    ],
)
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


def test_requirements_pin_the_range_the_grader_is_tested_with():
    """student_template/requirements.txt: torch in pyproject.toml's range, from PyTorch's CPU index, numpy, pytest."""
    from autograder.release.gradescope import CPU_INDEX, torch_requirement

    lines = [line for line in (TEMPLATE_DIR / "requirements.txt").read_text().splitlines() if not line.startswith("#")]
    assert lines == [f"--extra-index-url {CPU_INDEX}", torch_requirement(ROOT), "numpy", "pytest"]
    assert torch_requirement(ROOT) == "torch>=2.2,<2.14"


def test_students_receive_the_handout_and_its_picture():
    """The handout the feedback points to, and the picture it shows, lie beside the stubs, as in docs/; the handout
    without the sections of the parts the default settings turn off (the optional blockwise and decoding parts)."""
    from autograder.assignment.parts import handout_without
    from autograder.config import load_settings

    assert (TEMPLATE_DIR / "saturation.svg").read_bytes() == (ROOT / "docs" / "saturation.svg").read_bytes()
    handout = (ROOT / "docs" / "handout.md").read_text()
    off = load_settings(environ={}).parts.off()
    assert off == {"blockwise_attention", "grouped_query_attention", "KVCache", "attend_with_cache"}
    assert "<!-- function: blockwise_attention -->" in handout and "<!-- function: KVCache -->" in handout
    assert (TEMPLATE_DIR / "handout.md").read_text() == handout_without(handout, off)
    assert "online softmax" not in (TEMPLATE_DIR / "handout.md").read_text()
    assert "KV cache" not in (TEMPLATE_DIR / "handout.md").read_text()
    assert "](saturation.svg)" in (TEMPLATE_DIR / "handout.md").read_text()
    assert (ROOT / "assignments" / "source" / "sdpa" / "saturation.svg").is_file()  # beside the notebook, for nbgrader


def test_no_text_students_receive_names_a_file_they_do_not_have():
    """No file of student_template/ and no markdown of the notebook sends a student to docs/ or a build script."""
    import json

    notebook = json.loads((ROOT / "assignments" / "source" / "sdpa" / "sdpa.ipynb").read_text())
    texts = {
        **received_texts(),
        **{
            f"notebook cell {i}": "".join(cell["source"])
            for i, cell in enumerate(notebook["cells"])
            if cell["cell_type"] == "markdown"
        },
    }
    for name, text in texts.items():
        assert "docs/" not in text and "make_saturation_plot" not in text and "autograder/" not in text, name


@pytest.mark.slow
def test_the_student_set_up_installs_a_cpu_torch_in_the_tested_range(tmp_path):
    """The README's student command, in a fresh venv beside a copy of student_template/: torch inside the range the
    grader is tested with and a CPU build (from the CPU index where it answers, else from what pip reaches here), and
    the public tests then guide the student. Minutes: torch is some 200 MB (683 s on a busy shared machine;
    the install, not pip's retries, is the cost)."""
    from packaging.requirements import Requirement

    from autograder.release.gradescope import torch_requirement

    folder = student_folder(tmp_path)
    env = {key: value for key, value in os.environ.items() if key not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p and Path(p) != BIN)
    env["PIP_RETRIES"] = "0"  # an index that cannot be reached (the CPU index, from CI) is not retried
    venv = tmp_path / ".venv"
    assert run(["python3", "-m", "venv", str(venv)], env=env).returncode == 0
    install = run(
        [str(venv / "bin" / "pip"), "install", "-q", "-r", str(folder / "requirements.txt")],
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    probe = run(
        [str(venv / "bin" / "python"), "-c", "import torch; print(torch.__version__, torch.version.cuda)"], env=env
    )
    version, cuda = probe.stdout.split()
    assert Requirement(torch_requirement(ROOT)).specifier.contains(version.split("+")[0]), version
    assert cuda == "None", f"a CUDA build of torch ({cuda}) was installed"
    tests = run([str(venv / "bin" / "pytest")], cwd=folder, env=env)
    assert "Next: implement attention_scores in attention.py" in tests.stdout, tests.stdout[-2000:]
