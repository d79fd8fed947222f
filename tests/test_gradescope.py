"""The Gradescope bundle: built by sdpa-build, run as Gradescope runs it, on a correct and a wrong submission."""

from __future__ import annotations

import json
import os
import shutil
import stat
import zipfile

import pytest

from tests.helpers import BIN, REFERENCE, ROOT, SUBMISSIONS, run

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bundle")
    config = folder / "course.toml"
    config.write_text("[points]\nsdpa_gradients = 5\n")
    target = folder / "autograder.zip"
    result = run([str(BIN / "sdpa-build"), "--check"], cwd=ROOT)
    assert result.returncode == 0
    result = run([str(BIN / "sdpa-build"), "--gradescope", str(target), "--config", str(config)], cwd=ROOT)
    assert result.returncode == 0, result.stderr
    return target


def test_bundle_has_gradescopes_layout(bundle):
    """setup.sh and run_autograder at the root, executable, beside the wheel and the config."""
    with zipfile.ZipFile(bundle) as archive:
        names = archive.namelist()
        modes = {info.filename: info.external_attr >> 16 for info in archive.infolist()}
    assert "setup.sh" in names and "run_autograder" in names and "config.toml" in names
    assert any(name.startswith("sdpa_assignment-") and name.endswith(".whl") for name in names)
    assert modes["run_autograder"] & stat.S_IXUSR and modes["setup.sh"] & stat.S_IXUSR


@pytest.mark.parametrize("name, expected", [("correct", 57.0), ("mistake_divide_by_dk", None)])
def test_run_autograder_writes_results(bundle, tmp_path, name, expected):
    """run_autograder grades /autograder/submission into /autograder/results/results.json (root moved for the test)."""
    root = tmp_path / "autograder"
    source = root / "source"
    source.mkdir(parents=True)
    with zipfile.ZipFile(bundle) as archive:
        archive.extractall(source)
    (root / "submission").mkdir()
    text = REFERENCE.read_text()
    if name != "correct":
        text += "\n" + (SUBMISSIONS / "overlays" / f"{name}.py").read_text()
    (root / "submission" / "attention.py").write_text(text)
    runner = source / "run_autograder"
    runner.chmod(0o755)
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "SDPA_GRADE": str(BIN / "sdpa-grade")}
    result = run([shutil.which("bash"), str(runner)], env=env)
    assert result.returncode == 0, result.stderr
    results = json.loads((root / "results" / "results.json").read_text())
    assert results["score"] == sum(test["score"] for test in results["tests"])
    assert results["tests"], "no tests in the results"
    if expected is not None:
        assert results["score"] == expected  # the bundled config gives sdpa_gradients 5 points instead of 3
    else:
        scale = next(t for t in results["tests"] if t["name"].endswith("scale_values"))
        assert scale["score"] == 0 and "divided by d_k" in scale["output"]
