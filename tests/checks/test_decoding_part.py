"""The optional decoding part through every path an instructor uses: off by default (nothing of it handed out or
graded), and on with `[parts] decoding = true` given to the build and to the grader alike, alone or beside the
blockwise part: the hand-out, a single file, a batch, the nbgrader cycle and the Gradescope bundle. Totals are the
settings' sums, never numbers written here."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys

import nbformat
import pytest
import torch
from torch.nn.attention.bias import causal_lower_right

from autograder.assignment.catalogue import catalogue
from autograder.config import Parts, load_settings
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

ON = ROOT / "tests" / "decoding_on.toml"
FUNCTIONS = Parts.functions("decoding")  # grouped_query_attention, KVCache, attend_with_cache


def _points(settings) -> float:
    """The most a submission can earn here (no GPU: timing_gpu is not run)."""
    return sum(worth for check, worth in settings.points.items() if check != "timing_gpu")


def _part_checks() -> set[str]:
    return {entry.check for entry in catalogue() if entry.function in FUNCTIONS}


def _part(graded: dict) -> list[dict]:
    return [t for t in graded["tests"] if t["tags"][0] in FUNCTIONS]


def _grade(path, tmp_path, *config) -> dict:
    out = tmp_path / f"{path.stem}.json"
    result = run([str(BIN / "sdpa-grade"), "grade", str(path), "--json", str(out), *config])
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(out.read_text())


def test_the_part_hands_out_three_functions_of_the_reference():
    """Its key names the part, not a function: the three functions it turns on or off."""
    assert set(FUNCTIONS) == {"grouped_query_attention", "KVCache", "attend_with_cache"}
    assert set(FUNCTIONS) <= load_settings(environ={}).parts.off()
    assert not set(FUNCTIONS) & load_settings(ON, environ={}).parts.off()
    assert {entry.function for entry in catalogue() if entry.check in _part_checks()} == set(FUNCTIONS)


def test_off_by_default_nothing_of_the_part_is_handed_out():
    """The committed template, its conftest, its handout and the course's notebook hold nothing of the part."""
    notebook = (ROOT / "assignments" / "source" / "sdpa" / "sdpa.ipynb").read_text()
    for text in [
        *((TEMPLATE_DIR / name).read_text() for name in ("attention.py", "conftest.py", "handout.md")),
        notebook,
    ]:
        assert not [name for name in (*FUNCTIONS, "KV cache", "Grouped-query") if name in text]


def test_off_by_default_the_reference_gets_the_totals_of_before(tmp_path):
    """The part's checks do not run and count nothing."""
    graded = _grade(REFERENCE, tmp_path)
    on = load_settings(ON, environ={})
    assert graded["score"] == graded["max_score"] - quiz_points() == _points(load_settings(environ={}))
    assert graded["max_score"] == _points(on) - sum(on.points[check] for check in _part_checks()) + quiz_points()
    assert not _part(graded)


def test_bottom_right_is_torchs_causal_lower_right():
    """The checks' bottom-right mask is torch's own, for a chunk shorter than the keys, one query, and a square."""
    from autograder.checks.check_7_decoding import _causal

    for T_q, T_k in ((3, 9), (1, 6), (5, 5)):
        assert torch.equal(_causal(T_q, T_k, bottom_right=True), causal_lower_right(T_q, T_k)._materialize())


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


def test_on_the_template_holds_the_stubs_after_the_others(built):
    """The three stubs close the template, in the reference's order, with what is given kept (max_len's check) and
    what is the student's left out (the heads' check, the sharing); conftest says what each builds on; the handout
    teaches them."""
    template = (built / "student_template" / "attention.py").read_text()
    heads = ("def dot_product_variance(", "def grouped_query_attention(", "class KVCache:", "def attend_with_cache(")
    places = [template.index(text) for text in heads]
    assert places == sorted(places)
    stubs = template[places[1] :]
    assert stubs.count("raise NotImplementedError") == 5 and "BEGIN SOLUTION" not in stubs  # __len__ and append too
    assert "if max_len < 1:" in stubs and "repeat_interleave(group" not in stubs and "H % H_kv" not in stubs
    conftest = (built / "student_template" / "conftest.py").read_text()
    assert '"grouped_query_attention": ("scaled_dot_product_attention",)' in conftest
    assert '"attend_with_cache": ("grouped_query_attention",)' in conftest
    handout = (built / "student_template" / "handout.md").read_text()
    assert "## Decoding: the mask aligned bottom-right" in handout and "## Grouped-query attention" in handout


def test_on_the_notebook_teaches_each_function_above_its_stub_and_shows_each_check(built):
    notebook = nbformat.read(built / "assignments" / "source" / "sdpa" / "sdpa.ipynb", as_version=4)
    ids = [cell.metadata.get("nbgrader", {}).get("grade_id", "") for cell in notebook.cells]
    for name, heading in zip(FUNCTIONS, ("Grouped-query", "Decoding with a KV cache", "the mask aligned bottom-right")):
        assert heading in notebook.cells[ids.index(name) - 2].source
    settings = load_settings(ON, environ={})
    hidden = [i.removeprefix("check_") for i in ids if i.removeprefix("check_") in _part_checks()]
    assert sorted(hidden) == sorted(_part_checks())
    for check in hidden:
        assert notebook.cells[ids.index(f"check_{check}")].metadata["nbgrader"]["points"] == settings.points[check]


def test_on_the_untouched_template_gets_nothing_for_the_part(built, tmp_path):
    """Graded with the part on, the stubs as handed out lose every check of the part, saying they are not written."""
    graded = _grade(built / "student_template" / "attention.py", tmp_path, "--config", str(ON))
    part = _part(graded)
    assert {t["extra_data"]["check"] for t in part} == _part_checks()
    assert all(t["score"] == 0 for t in part)
    assert "grouped_query_attention is not implemented yet" in part[0]["output"]


def test_on_with_blockwise_too_the_reference_gets_both_parts(tmp_path):
    """The two parts are independent: both on, the reference earns every check of both."""
    both = tmp_path / "both.toml"
    both.write_text("[parts]\nblockwise_attention = true\ndecoding = true\n")
    graded = _grade(REFERENCE, tmp_path, "--config", str(both))
    settings = load_settings(both, environ={})
    assert graded["score"] == graded["max_score"] - quiz_points() == _points(settings)
    tags = {t["tags"][0] for t in graded["tests"]}
    assert {"blockwise_attention", *FUNCTIONS} <= tags


@pytest.mark.slow
def test_on_a_batch_grades_the_part_for_each_student(built, tmp_path):
    """`sdpa-grade batch DIR --config FILE`: the reference earns the whole part, the untouched template none of it."""
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
    assert len(_part(graded["bob"])) == len(_part_checks()) and not any(t["score"] for t in _part(graded["bob"]))


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
    graded = _grade(submitted, tmp_path, "--config", str(ON))
    assert float(values["score"]) == float(values["max_score"]) == graded["score"] == graded["max_score"]
    assert len(_part(graded)) == len(_part_checks())


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
    part = _part(results)
    assert len(part) == len(_part_checks()) and all(t["score"] == t["max_score"] for t in part), graded.stdout[-2000:]
    assert results["score"] == _points(load_settings(ON, environ={}))


def test_nbgrader_refuses_a_notebook_built_with_other_parts_than_it_grades():
    """A notebook with the part's cells graded with it off (and the reverse) is refused, naming the part's key."""
    from autograder.nbgrader_path.autograde import GraderFailed, _is_test, _parts_problem
    from autograder.release.notebook import build_notebook

    def tests_of(built: str) -> list:
        return [cell for cell in nbformat.reads(built, as_version=4).cells if _is_test(cell)]

    on, default = load_settings(ON, environ={}), load_settings(environ={})
    built_on, built_off = tests_of(build_notebook(ROOT, on)), tests_of(build_notebook(ROOT))
    _parts_problem(built_on, on)
    _parts_problem(built_off, default)
    with pytest.raises(GraderFailed, match=r"built with the optional part decoding.*off \(\[parts\] decoding\)"):
        _parts_problem(built_on, default)
    with pytest.raises(GraderFailed, match="built without the optional part decoding.*turn it on"):
        _parts_problem(built_off, on)
