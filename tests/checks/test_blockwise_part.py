"""The optional blockwise part through every path an instructor uses: off by default (nothing of it handed out or
graded), and on with `[parts] blockwise_attention = true` given to the build and to the grader alike: the hand-out,
a single file, a batch, the nbgrader cycle and the Gradescope bundle. Totals are the settings' sums, never numbers
written here: off, the part's checks count nothing; on, they count their points."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys

import nbformat
import pytest

from autograder.assignment.catalogue import catalogue
from autograder.config import load_settings
from tests.helpers import (
    BIN,
    BUILD,
    REFERENCE,
    ROOT,
    TEMPLATE_DIR,
    answered,
    clean_env,
    nbgrader,
    quiz_points,
    run,
    tracked_copy,
)

ON = ROOT / "tests" / "blockwise_on.toml"
PART = "blockwise_attention"


def _points(settings) -> float:
    """The most a submission can earn here (no GPU: timing_gpu is not run)."""
    return sum(worth for check, worth in settings.points.items() if check != "timing_gpu")


def _part_points(settings) -> float:
    """What the part's checks are worth under ``settings``."""
    return sum(settings.points[entry.check] for entry in catalogue() if entry.function == PART)


def test_off_by_default_nothing_of_the_part_is_handed_out():
    """The committed template, its conftest, its handout and the course's notebook hold nothing of the part."""
    for name in ("attention.py", "conftest.py", "handout.md"):
        assert PART not in (TEMPLATE_DIR / name).read_text(), name
    assert PART not in (ROOT / "assignments" / "source" / "sdpa" / "sdpa.ipynb").read_text()


def test_off_by_default_the_reference_gets_the_totals_of_before(tmp_path):
    """The part's checks do not run and count nothing; a course's [points] for them is accepted and changes nothing."""
    course = tmp_path / "course.toml"
    course.write_text("[points]\nblockwise_memory = 3\n")
    for config in ([], ["--config", str(course)]):
        result = run([str(BIN / "sdpa-grade"), "grade", str(REFERENCE), "--json", str(tmp_path / "r.json"), *config])
        assert result.returncode == 0, result.stderr[-2000:]
        graded = json.loads((tmp_path / "r.json").read_text())
        on = load_settings(ON, environ={})
        assert graded["score"] == graded["max_score"] - quiz_points() == _points(load_settings(environ={}))
        assert graded["max_score"] == _points(on) - _part_points(on) + quiz_points()
        assert not [t for t in graded["tests"] if PART in t["name"]]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A copy of the project's tracked files, its hand-out built with the part on, as an instructor does."""
    copy = tracked_copy(tmp_path_factory.mktemp("on"))
    build = [sys.executable, "-c", BUILD, "--root", str(copy), "--config", str(ON)]
    result = subprocess.run(
        build, cwd=copy, env={**os.environ, "PYTHONPATH": str(copy)}, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    return copy


def test_on_the_template_holds_the_stub_after_the_attention(built):
    """The stub follows scaled_dot_product_attention, keeps its block_size check; conftest and handout name the part."""
    template = (built / "student_template" / "attention.py").read_text()
    assert template.index("def scaled_dot_product_attention(") < template.index(f"def {PART}(")
    assert template.index(f"def {PART}(") < template.index("class MultiHeadAttention")
    stub = template[template.index(f"def {PART}(") : template.index("class MultiHeadAttention")]
    assert "raise NotImplementedError" in stub and "if block_size < 1:" in stub and "BEGIN SOLUTION" not in stub
    assert f'"{PART}",' in (built / "student_template" / "conftest.py").read_text()
    assert "## Blockwise attention: the online softmax" in (built / "student_template" / "handout.md").read_text()


def test_on_the_notebook_teaches_the_part_above_its_stub_and_shows_each_check(built):
    """The handout's section renders above the stub's cell, and each of the part's checks has a cell with its points."""
    notebook = nbformat.read(built / "assignments" / "source" / "sdpa" / "sdpa.ipynb", as_version=4)
    ids = [cell.metadata.get("nbgrader", {}).get("grade_id", "") for cell in notebook.cells]
    stub = ids.index(PART)
    assert "## Blockwise attention: the online softmax" in notebook.cells[stub - 2].source
    settings = load_settings(ON, environ={})
    hidden = [i for i in ids if i.startswith("check_blockwise") or i == "check_integrity_blockwise"]
    assert len(hidden) == 8
    for grade_id in hidden:
        cell = notebook.cells[ids.index(grade_id)]
        assert cell.metadata["nbgrader"]["points"] == settings.points[grade_id.removeprefix("check_")]


def test_on_the_untouched_template_gets_nothing_for_the_part(built, tmp_path):
    """Graded with the part on, the stub as handed out loses every check of the part, saying it is not written yet."""
    template = built / "student_template" / "attention.py"
    result = run(
        [str(BIN / "sdpa-grade"), "grade", str(template), "--config", str(ON), "--json", str(tmp_path / "t.json")]
    )
    graded = json.loads((tmp_path / "t.json").read_text())
    part = [t for t in graded["tests"] if t["tags"][0] == PART]
    assert len(part) == 8 and all(t["score"] == 0 for t in part), result.stderr[-2000:]
    assert "blockwise_attention is not implemented yet" in part[0]["output"]


@pytest.mark.slow
def test_on_a_batch_grades_the_part_for_each_student(built, tmp_path):
    """`sdpa-grade batch DIR --config FILE`: the reference earns the whole part and the untouched template none of it,
    each out of the total with the part's points."""
    folder, out = tmp_path / "class", tmp_path / "grades"
    folder.mkdir()
    shutil.copy(REFERENCE, folder / "ada.py")
    shutil.copy(built / "student_template" / "attention.py", folder / "bob.py")
    batch = [str(BIN / "sdpa-grade"), "batch", str(folder), "--config", str(ON), "--jobs", "2", "--json-dir", str(out)]
    result = run(batch, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    graded = {path.stem: json.loads(path.read_text()) for path in out.glob("*.json")}
    settings = load_settings(ON, environ={})
    assert graded["ada"]["max_score"] == graded["bob"]["max_score"] == _points(settings) + quiz_points()
    assert graded["ada"]["score"] == _points(settings)  # an attention.py: its knowledge check not handed in
    part = [t for t in graded["bob"]["tests"] if t["tags"][0] == PART]
    assert len(part) == 8 and not any(t["score"] for t in part)
    assert graded["bob"]["score"] <= _points(settings) - _part_points(settings)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_on_the_nbgrader_cycle_grades_the_part_as_sdpa_grade_does(built, tmp_path):
    """The course's notebook built with the part on, autograded with the same settings file: a student who answers
    every cell right gets the whole part, and nbgrader's export gives what `sdpa-grade --config` gives."""
    course = tmp_path / "course"
    shutil.copytree(
        built / "assignments",
        course,
        ignore=shutil.ignore_patterns("release", "submitted", "autograded", "feedback", "exchange", "gradebook.db"),
    )
    shutil.copy(ON, course / "course.toml")
    with open(course / "nbgrader_config.py", "a") as config:
        config.write('\nc.GradeNotebook.settings_file = "course.toml"\n')
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    nbgrader("generate_assignment", "sdpa", "--force", cwd=course, env=env)
    source = nbformat.read(course / "source" / "sdpa" / "sdpa.ipynb", as_version=4)
    release = nbformat.read(course / "release" / "sdpa" / "sdpa.ipynb", as_version=4)
    submitted = course / "submitted" / "ada" / "sdpa" / "sdpa.ipynb"
    submitted.parent.mkdir(parents=True)
    nbformat.write(answered(release, source, {}), submitted)
    nbgrader("autograde", "sdpa", "--force", cwd=course, env=env)
    nbgrader("export", cwd=course, env=env)
    with open(course / "grades.csv") as handle:
        values = next(row for row in csv.DictReader(handle) if row["student_id"] == "ada")
    result = run(
        [str(BIN / "sdpa-grade"), "grade", str(submitted), "--config", str(ON), "--json", str(tmp_path / "a.json")]
    )
    graded = json.loads((tmp_path / "a.json").read_text())
    assert float(values["score"]) == float(values["max_score"]) == graded["score"] == graded["max_score"]
    assert len([t for t in graded["tests"] if t["tags"][0] == PART]) == 8, result.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_on_the_gradescope_bundle_grades_the_part(built, tmp_path, gradescope_set_up):
    """Built in the copy (a build with a settings file writes the hand-out it describes into the project it builds)."""
    bundle = tmp_path / "autograder.zip"
    build = [str(BIN / "sdpa-build"), "--root", str(built), "--gradescope", str(bundle), "--config", str(ON)]
    result = run(build, cwd=built)
    assert result.returncode == 0, result.stderr
    root, installed = gradescope_set_up(bundle, tmp_path)  # its setup.sh run once in the session
    assert installed.returncode == 0, installed.stdout[-2000:] + installed.stderr[-2000:]
    (root / "submission").mkdir()
    (root / "submission" / "attention.py").write_text(REFERENCE.read_text())
    graded = run(
        [shutil.which("bash"), str(root / "source" / "run_autograder")],
        cwd=root / "source",
        env=clean_env(AUTOGRADER_ROOT=str(root)),
    )
    results = json.loads((root / "results" / "results.json").read_text())
    part = [t for t in results["tests"] if t["tags"][0] == PART]
    assert len(part) == 8 and all(t["score"] == t["max_score"] for t in part), graded.stdout[-2000:]
    assert results["score"] == _points(load_settings(ON, environ={}))


def test_the_similarity_pass_knows_the_parts_stub_as_handed_out_from_its_settings(tmp_path):
    """Installed from a wheel, the code a batch's similarity credits no pair with is the template its --config
    hands out: the part's stub with the part on, nothing of it with the part off."""
    from autograder.course import similarity

    on = "\n".join(similarity.given_code(tmp_path, off=load_settings(ON, environ={}).parts.off()))
    off = "\n".join(similarity.given_code(tmp_path, off=load_settings(environ={}).parts.off()))
    assert f"def {PART}(" in on and "if block_size < 1:" in on
    assert PART not in off
