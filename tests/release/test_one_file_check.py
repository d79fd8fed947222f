"""Adding a hidden check is one file and `sdpa-build` (docs/architecture.md): in a copy of the project, a new check
file alone, then the build, gives the reference the old total plus the check's points, with the check passed; the
build writes the notebook's hidden cell and docs/grading.md's row (and nothing else), and `sdpa-build --check` passes
there after it. The fast suite passes in such a copy too (checked by hand, not in CI: too long)."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from tests.helpers import BUILD, ROOT, maximum, run, total

# what grading and the build read: the grader, the reference, the nbgrader source, the template's public tests, the
# docs the build copies or writes, and pyproject.toml (the torch range)
COPIED = ("autograder", "reference", "assignments", "student_template", "docs", "pyproject.toml")

PERMUTATION = '''"""scaled_dot_product_attention: the output does not depend on the order of the keys."""

import pytest
import torch

from autograder.checks.expect import expect_tensor, magnitude


@pytest.mark.check(function="scaled_dot_product_attention", category="values", points=2, exercises=(), picture=None)
def test_sdpa_permutation(loaded, draw, settings):
    """Permuting the keys and the values together leaves the output unchanged."""
    B, T_q, T_k, d_k, d_v = draw.sizes(5)
    Q, K, V = draw.normal(B, T_q, d_k), draw.normal(B, T_k, d_k), draw.normal(B, T_k, d_v)
    order = torch.randperm(T_k, generator=draw.generator)
    output, _ = loaded.scaled_dot_product_attention(Q, K, V)
    permuted, _ = loaded.scaled_dot_product_attention(Q, K[:, order], V[:, order])
    size = magnitude(V)
    tolerance = settings.tolerance("float64", scale=size)
    expect_tensor(permuted, output, what="the output with the keys and values permuted", tolerance=tolerance)
'''


def project_copy(folder: Path) -> Path:
    """A copy of what grading and the build read, without caches or build outputs."""
    for name in COPIED:
        source, target = ROOT / name, folder / name
        if source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy(source, target)
    return folder


def in_copy(copy: Path, *args: str, timeout: float = 300):
    """Python run in the copy (``-m MODULE`` or ``-c CODE``): its autograder imported, not this checkout's."""
    env = {**os.environ, "PYTHONPATH": str(copy)}
    env.pop("SDPA_GRADE_CONFIG", None)
    return run([sys.executable, *args], cwd=copy, timeout=timeout, env=env)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_check_added_in_one_file_is_graded_after_sdpa_build(tmp_path):
    copy = project_copy(tmp_path / "project")
    (copy / "autograder" / "checks" / "check_6_permutation.py").write_text(PERMUTATION)
    before = {path: path.read_bytes() for path in copy.rglob("*") if path.is_file()}

    built = in_copy(copy, "-c", BUILD)  # sdpa-build, the copy's
    assert built.returncode == 0, built.stderr
    assert "wrote docs/grading.md" in built.stdout and "wrote assignments/source/sdpa/sdpa.ipynb" in built.stdout
    checked = in_copy(copy, "-c", BUILD, "--check")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    changed = {path.relative_to(copy).as_posix() for path in copy.rglob("*") if path.is_file()}
    changed = {name for name in changed if (copy / name).read_bytes() != before.get(copy / name)}
    assert changed == {"docs/grading.md", "assignments/source/sdpa/sdpa.ipynb"}
    row = "| sdpa_permutation | scaled_dot_product_attention | values | 2 | Permuting the keys and the values together"
    assert row in (copy / "docs" / "grading.md").read_text()
    assert "# Hidden check sdpa_permutation (2 points)" in (copy / "assignments/source/sdpa/sdpa.ipynb").read_text()

    out = tmp_path / "results.json"
    graded = in_copy(copy, "-m", "autograder.cli", "grade", "reference/attention.py", "--json", str(out), "--seed", "7")
    assert graded.returncode == 0, graded.stderr
    results = json.loads(out.read_text())
    assert "autograder/checks/check_6_permutation.py" in results["extra_data"]["provenance"]["check_files"]
    assert results["score"] == total() + 2 and results["max_score"] == maximum() + 2
    (added,) = [test for test in results["tests"] if test["extra_data"]["check"] == "sdpa_permutation"]
    assert added["score"] == added["max_score"] == 2 and added["extra_data"]["outcome"] == "passed"
