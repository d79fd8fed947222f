"""The Gradescope bundle and the wheel, as users install them: built by sdpa-build, set up in fresh
virtual environments with the bundle's own setup.sh (or a plain pip install), then graded.

Nothing here runs the editable checkout: every grading uses a venv made by the test, its python and
PATH cleared of the project's own environment.
"""

from __future__ import annotations

import json
import shutil
import stat
import subprocess
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_sdist_filename, parse_wheel_filename

from autograder.release.gradescope import CPU_INDEX, setup_script, torch_requirement
from tests.helpers import (
    BIN,
    REFERENCE,
    ROOT,
    SETUP_TIMEOUT,
    SUBMISSIONS,
    clean_env,
    run,
    setup,
    total,
    unpack,
    with_overlay,
)

pytestmark = pytest.mark.slow


def submission_text(name: str) -> str:
    """A test submission: the reference, an overlay appended to it, or a standalone file."""
    if name == "correct":
        return REFERENCE.read_text()
    if (SUBMISSIONS / "overlays" / f"{name}.py").is_file():
        return with_overlay(name)
    return (SUBMISSIONS / "standalone" / f"{name}.py").read_text()


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("bundle")
    config = folder / "course.toml"
    # a late policy without a due date: Gradescope's own due date applies, where submission_metadata.json gives one
    config.write_text('[points]\nsdpa_gradients = 5\n[deadline]\npolicy = "per_day"\npercent = 10\n')
    target = folder / "autograder.zip"
    result = run([str(BIN / "sdpa-build"), "--check"], cwd=ROOT)
    assert result.returncode == 0
    result = run([str(BIN / "sdpa-build"), "--gradescope", str(target), "--config", str(config)], cwd=ROOT)
    assert result.returncode == 0, result.stderr
    return target


@pytest.fixture(scope="module")
def wheel(bundle, tmp_path_factory) -> Path:
    """The wheel inside the bundle, where `pip install dist/*.whl` would find it."""
    dist = tmp_path_factory.mktemp("dist")
    with zipfile.ZipFile(bundle) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".whl"))
        archive.extract(name, dist)
    return dist / name


@pytest.fixture(scope="module")
def gradescope(bundle, tmp_path_factory, gradescope_set_up):
    """A fake /autograder, set up by the bundle's setup.sh (run once in the session for its setup.sh and wheel)."""
    root, result = gradescope_set_up(bundle, tmp_path_factory.mktemp("gradescope"))
    assert result.returncode == 0, result.stdout + result.stderr
    return root, result


def run_autograder(
    root: Path, name: str, text: str | None = None, metadata: dict | None = None
) -> tuple[subprocess.CompletedProcess, dict]:
    """Put ``name`` (or ``text``) in /autograder/submission (and ``metadata`` in submission_metadata.json), run
    run_autograder, return its run and results.json."""
    for folder in ("submission", "results"):
        shutil.rmtree(root / folder, ignore_errors=True)
    (root / "submission_metadata.json").unlink(missing_ok=True)
    if metadata is not None:
        (root / "submission_metadata.json").write_text(json.dumps(metadata))
    (root / "submission").mkdir()
    (root / "submission" / "attention.py").write_text(submission_text(name) if text is None else text)
    result = run(
        [shutil.which("bash"), str(root / "source" / "run_autograder")],
        cwd=root / "source",
        env=clean_env(AUTOGRADER_ROOT=str(root)),
    )
    return result, json.loads((root / "results" / "results.json").read_text())


def test_bundle_has_gradescopes_layout(bundle):
    """setup.sh and run_autograder at the root, executable, beside the wheel and the config."""
    with zipfile.ZipFile(bundle) as archive:
        names = archive.namelist()
        modes = {info.filename: info.external_attr >> 16 for info in archive.infolist()}
    assert "setup.sh" in names and "run_autograder" in names and "config.toml" in names
    assert any(name.startswith("sdpa_assignment-") and name.endswith(".whl") for name in names)
    assert modes["run_autograder"] & stat.S_IXUSR and modes["setup.sh"] & stat.S_IXUSR


def test_wheel_holds_every_file_of_the_package(wheel):
    """Every tracked file under autograder/ and reference/ is in the wheel (pytest.ini, worker.py, defaults.toml...)."""
    tracked = run(["git", "ls-files", "autograder", "reference"], cwd=ROOT)
    if tracked.returncode != 0:
        pytest.skip("not a git checkout")
    with zipfile.ZipFile(wheel) as archive:
        packed = set(archive.namelist())
    missing = sorted(set(tracked.stdout.split()) - packed)
    assert not missing, f"files the grader may need at run time are not in the wheel: {missing}"


def test_setup_installs_a_cpu_torch_in_the_tested_range(gradescope):
    """setup.sh says where torch came from and what it installed: a CPU build, inside the project's range."""
    root, setup = gradescope
    assert "setup.sh: installed torch" in setup.stdout and "a CPU build" in setup.stdout, setup.stdout
    python = str(root / "venv" / "bin" / "python")
    version = run([python, "-c", "import torch; print(torch.__version__)"]).stdout.strip()
    requirement = Requirement(torch_requirement(ROOT))
    assert requirement.specifier.contains(version.split("+")[0], prereleases=True), (version, requirement)
    # this machine cannot reach PyTorch's CPU index: setup.sh must say so and take the default index
    assert "from the default index" in setup.stdout and CPU_INDEX in setup.stderr, setup.stdout + setup.stderr


def test_bundle_grades_with_its_own_install(gradescope):
    """The venv setup.sh made imports the package from itself, never from this checkout."""
    root, _ = gradescope
    code = "import autograder, reference; print(autograder.__file__, reference.__file__)"
    where = run([str(root / "venv" / "bin" / "python"), "-c", code], cwd=root, env=clean_env())
    assert where.returncode == 0, where.stderr
    venv = (root / "venv").resolve()  # the session's one venv of this setup.sh and wheel, linked here
    assert all(Path(path).resolve().is_relative_to(venv) for path in where.stdout.split()), where.stdout


def test_correct_submission_gets_full_marks(gradescope):
    """A correct attention.py: exit 0, full marks with the bundled config (sdpa_gradients 5 points instead of 3)."""
    result, results = run_autograder(gradescope[0], "correct")
    assert result.returncode == 0, result.stdout + result.stderr
    assert results["tests"] and results["score"] == sum(test["score"] for test in results["tests"])
    assert results["score"] == total(gpu=True)


def test_results_name_the_graded_file_its_sha256_and_the_bundled_settings(gradescope):
    """Gradescope's results.json says what it graded (extra_data.provenance): the file, its SHA-256 recomputed
    here, and the settings digest of the bundled config."""
    import hashlib

    from autograder import provenance
    from autograder.config import load_settings

    root = gradescope[0]
    _, results = run_autograder(root, "correct")
    record = results["extra_data"]["provenance"]
    graded = (root / "submission" / "attention.py").read_bytes()
    assert (record["graded_file"], record["sha256"]) == ("attention.py", hashlib.sha256(graded).hexdigest())
    bundled = load_settings(root / "source" / "config.toml", environ={})
    assert record["settings_sha256"] == provenance.settings_sha256(bundled)
    assert record["checks_sha256"] == provenance.checks_sha256()  # the wheel's checks are this checkout's


def test_wrong_submission_loses_the_right_points(gradescope):
    """Dividing by d_k: the scale check scores 0 and names the mistake."""
    result, results = run_autograder(gradescope[0], "mistake_divide_by_dk")
    assert result.returncode == 0, result.stderr
    scale = next(t for t in results["tests"] if t["name"].endswith("scale_values"))
    assert scale["score"] == 0 and "divided by d_k" in scale["output"]
    assert 0 < results["score"] < total(gpu=True)


def test_a_submission_two_days_late_loses_its_penalty(gradescope):
    """submission_metadata.json two days after Gradescope's due date, 10% a day: results.json's score is the final
    one, and it says how it was reached; the tests keep the points they earned."""
    metadata = {
        "created_at": "2026-12-03T22:00:00.000000-08:00",
        "assignment": {"due_date": "2026-12-01T23:00:00.000000-08:00", "late_due_date": None, "title": "SDPA"},
        "users": [{"email": "student@example.com", "id": 1234, "name": "Student User"}],
    }
    result, results = run_autograder(gradescope[0], "correct", metadata=metadata)
    assert result.returncode == 0, result.stdout + result.stderr
    raw = sum(test["score"] for test in results["tests"])
    late = results["extra_data"]["late"]
    assert (late["raw_score"], late["late_penalty"], late["hours_late"]) == (raw, pytest.approx(raw * 0.2), 47.0)
    assert results["score"] == pytest.approx(raw * 0.8)


@pytest.mark.parametrize("name", ["fake_results", "os_exit_at_import"])
def test_hostile_submission_cannot_forge_its_results(gradescope, name):
    """A submission that writes fake results files, or exits at import: the grader's results stand, exit 0."""
    result, results = run_autograder(gradescope[0], name)
    assert result.returncode == 0, result.stderr
    assert results["score"] == sum(test["score"] for test in results["tests"]) < total(gpu=True)
    assert "grader_error" not in results


def test_an_import_outside_the_list_is_graded_alike_here_and_on_gradescope(gradescope, tmp_path):
    """A correct file with matplotlib imported at the top: the bundle (whose venv has no matplotlib) and sdpa-grade in
    this venv (which has it, for the pictures) give the same score and the same reason, the line and the list. It once
    scored full marks here and 0 there."""
    root, _ = gradescope
    text = REFERENCE.read_text().replace("import math\n", "import math\nimport matplotlib.pyplot as plt\n", 1)
    result, there = run_autograder(root, "", text)
    assert result.returncode == 0, result.stdout + result.stderr
    (tmp_path / "attention.py").write_text(text)
    config = root / "source" / "config.toml"  # the bundle's settings, the same for both
    local = run(
        [str(BIN / "sdpa-grade"), "grade", "attention.py", "--json", "here.json", "--config", str(config)], cwd=tmp_path
    )
    assert local.returncode == 0, local.stdout + local.stderr
    here = json.loads((tmp_path / "here.json").read_text())
    assert run([str(BIN / "python"), "-c", "import matplotlib"]).returncode == 0  # installed here, not there
    assert (here["score"], here["max_score"]) == (there["score"], there["max_score"]) == (0, there["max_score"])
    assert here["tests"][0]["output"] == there["tests"][0]["output"]
    assert (
        "line 18 (`import matplotlib.pyplot as plt`) imports matplotlib.pyplot; a submission may import only"
        in (there["tests"][0]["output"])
    )


def test_plain_wheel_install_grades_outside_the_repository(wheel, tmp_path):
    """`pip install dist/*.whl` in a fresh venv, then sdpa-grade on a submission in a folder of its own."""
    venv = tmp_path / "venv"
    env = clean_env()
    assert run(["python3", "-m", "venv", str(venv)], env=env).returncode == 0
    install = run([str(venv / "bin" / "pip"), "install", "-q", str(wheel)], env=env, timeout=SETUP_TIMEOUT)
    assert install.returncode == 0, install.stderr
    student = tmp_path / "student"
    student.mkdir()
    (student / "attention.py").write_text(submission_text("correct"))
    result = run(
        [str(venv / "bin" / "sdpa-grade"), "grade", "attention.py", "--json", "results.json"], cwd=student, env=env
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads((student / "results.json").read_text())["score"] == total()


def local_index(folder: Path) -> Path:
    """A CPU wheel index on disk (PEP 503): torch in the project's range and its dependencies, as pip gets them here."""
    files = folder / "files"
    got = run(
        [str(BIN / "python"), "-m", "pip", "download", "-q", "-d", str(files), torch_requirement(ROOT)],
        timeout=SETUP_TIMEOUT,
    )
    assert got.returncode == 0, got.stderr
    projects: dict[str, list[str]] = {}
    for path in files.iterdir():
        name = parse_wheel_filename(path.name)[0] if path.suffix == ".whl" else parse_sdist_filename(path.name)[0]
        projects.setdefault(canonicalize_name(name), []).append(path.name)
    for name, names in projects.items():
        (folder / name).mkdir()
        links = "".join(f'<a href="../files/{file}">{file}</a>\n' for file in names)
        (folder / name / "index.html").write_text(f"<!DOCTYPE html><html><body>\n{links}</body></html>\n")
    return folder


def test_setup_takes_torch_from_the_cpu_index_when_it_answers(bundle, tmp_path):
    """With a CPU index that can be reached (here a local copy, via SDPA_TORCH_INDEX), torch comes from there."""
    index = local_index(tmp_path / "index").as_uri()
    root = unpack(bundle, tmp_path)
    result = setup(root, SDPA_TORCH_INDEX=index)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"CPU build, from {index}" in result.stdout, result.stdout
    assert "a CPU build" in result.stdout.splitlines()[-1], result.stdout


def test_setup_refuses_an_unknown_torch_build(bundle, tmp_path):
    """SDPA_TORCH=cuda is neither cpu nor gpu: setup.sh stops, naming the value, before installing anything."""
    root = unpack(bundle, tmp_path)
    result = setup(root, SDPA_TORCH="cuda")
    assert result.returncode == 2 and "Invalid SDPA_TORCH=cuda: expected cpu or gpu" in result.stderr
    assert not list((root / "venv").glob("lib/python*/site-packages/torch"))


def test_gpu_switch_takes_the_default_index():
    """sdpa-build --torch gpu bakes SDPA_TORCH=gpu into setup.sh; a wrong value is refused."""
    assert 'TORCH_BUILD="${SDPA_TORCH:-gpu}"' in setup_script(ROOT, "gpu")
    assert 'TORCH_BUILD="${SDPA_TORCH:-cpu}"' in setup_script(ROOT, "cpu")
    with pytest.raises(ValueError, match="Invalid torch build 'cuda'"):
        setup_script(ROOT, "cuda")
