"""Every results file says what graded it (the file and its SHA-256, the checks, the settings, when); a batch
rerun regrades exactly what changed; a merge refuses results graded differently; Ctrl-C never leaves a results
file half-written or replaced."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import signal
import subprocess
import time
from datetime import datetime, timezone
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from autograder import provenance
from autograder.config import load_settings
from autograder.grade import Grading, read
from tests.helpers import BIN, FAST_LIMITS, REFERENCE, ROOT, SUBMISSIONS, run, total


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def provenance_of(path: Path) -> dict:
    return json.loads(path.read_text())["extra_data"]["provenance"]


def checks_sha256_by_hand() -> str:
    """The checks' digest, recomputed here from the files themselves, as docs/instructor.md describes it."""
    files = sorted((ROOT / "autograder" / "checks").glob("*.py")) + [
        ROOT / "autograder" / "checks" / "pytest.ini",
        ROOT / "reference" / "attention.py",
    ]
    names = sorted(path.relative_to(ROOT).as_posix() for path in files)
    lines = "".join(f"{name} {sha256(ROOT / name)}\n" for name in names)
    return hashlib.sha256(lines.encode()).hexdigest()


# --- fast: the record itself -------------------------------------------------------------------------------------


def test_the_read_stage_records_the_file_it_read_and_its_sha256(tmp_path):
    """A student's folder: the graded file's path relative to the folder, and the SHA-256 of its bytes."""
    folder = tmp_path / "alice"
    (folder / "sdpa").mkdir(parents=True)
    notebook = folder / "sdpa" / "sdpa.ipynb"
    nbformat.write(new_notebook(cells=[new_code_cell(REFERENCE.read_text())]), notebook)
    grading = read(Grading(folder, load_settings(environ={}), folder=tmp_path))
    record = provenance.record(grading)
    assert record["graded_file"] == "sdpa/sdpa.ipynb"
    assert record["sha256"] == sha256(notebook)
    assert record["checks_sha256"] == checks_sha256_by_hand()
    assert datetime.fromisoformat(record["graded_at"].replace("Z", "+00:00")).tzinfo == timezone.utc


def test_an_unreadable_file_is_still_named_with_its_sha256(tmp_path):
    """A file that is not UTF-8 is ungradable, and its record still says which file and which bytes."""
    bad = tmp_path / "attention.py"
    bad.write_bytes(b"\xff\xfe def attention_scores(): pass\n")
    grading = read(Grading(bad, load_settings(environ={}), folder=tmp_path))
    assert "not UTF-8" in grading.ungradable
    record = provenance.record(grading)
    assert (record["graded_file"], record["sha256"]) == ("attention.py", sha256(bad))


def test_the_settings_digest_follows_the_values_not_where_they_came_from(tmp_path):
    """The defaults written out in a file (2 for 2.0) digest as the defaults; one changed point does not."""
    defaults = load_settings(environ={})
    name, points = next(iter(defaults.points.items()))
    same, changed = tmp_path / "same.toml", tmp_path / "changed.toml"
    same.write_text(f"[points]\n{name} = {int(points) if points == int(points) else points}\n")
    changed.write_text(f"[points]\n{name} = {points + 1}\n")
    digest = provenance.settings_sha256(defaults)
    assert provenance.settings_sha256(load_settings(same)) == digest
    assert provenance.settings_sha256(load_settings(changed)) != digest
    record = provenance.settings_record(load_settings(changed))
    assert record["points"][name] == points + 1 and "source" not in record


def test_stale_names_the_first_thing_that_changed(tmp_path):
    """A result is current when its file, checks, settings and device are today's; otherwise it says which changed."""
    settings = load_settings(environ={})
    submission = tmp_path / "bo.py"
    submission.write_text(REFERENCE.read_text())
    grading = read(Grading(submission, settings, folder=tmp_path))
    result = {"extra_data": {"provenance": provenance.record(grading)}}
    now = provenance.now(settings, "cpu")
    assert provenance.stale(result, submission, now) == ""
    assert provenance.stale({"tests": []}, submission, now) == provenance.NO_RECORD
    assert provenance.stale(result, submission, provenance.now(settings, "cuda")) == provenance.DEVICE
    other = settings.replace("limits", require_sandbox=not settings.limits.require_sandbox)
    assert provenance.stale(result, submission, provenance.now(other, "cpu")) == provenance.SETTINGS
    submission.write_text(REFERENCE.read_text() + "\n# changed\n")
    assert provenance.stale(result, submission, now) == provenance.FILE


def test_a_change_anywhere_in_the_grader_regrades_and_says_so(tmp_path, monkeypatch):
    """A fix in the worker, the reader or scoring (not the checks) makes every result stale as "grader changed";
    a result recorded before the grader's digest was is stale the same way."""
    import shutil

    settings = load_settings(environ={})
    submission = tmp_path / "bo.py"
    submission.write_text(REFERENCE.read_text())
    grading = read(Grading(submission, settings, folder=tmp_path))
    result = {"extra_data": {"provenance": provenance.record(grading)}}
    installed = tmp_path / "site" / "autograder"
    shutil.copytree(ROOT / "autograder", installed, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(provenance, "PACKAGE", installed)
    monkeypatch.setattr(provenance, "CHECKS", installed / "checks")
    assert provenance.stale(result, submission, provenance.now(settings, "cpu")) == ""
    for fixed in ("sandbox/student_side/serving.py", "scoring.py", "read/submission.py", "read/bounded.py"):
        path = installed / fixed
        original = path.read_text()
        path.write_text(original + "\n# a fix\n")
        assert provenance.stale(result, submission, provenance.now(settings, "cpu")) == provenance.GRADER, fixed
        path.write_text(original)
    older = {"extra_data": {"provenance": {**provenance.of(result), "grader_sha256": None}}}
    assert provenance.stale(older, submission, provenance.now(settings, "cpu")) == provenance.GRADER


def _results(folder: Path, by_settings: dict[str, list[str]]) -> None:
    """Results as shards write them (a merge only reads them), each with the provenance of its settings file."""
    folder.mkdir()
    for config, names in by_settings.items():
        settings = load_settings(config or None, environ={})
        for name in names:
            record = {"graded_file": "attention.py", "sha256": "0" * 64, "checks_sha256": "c" * 64,
                      "settings_sha256": provenance.settings_sha256(settings), "settings_from": settings.source,
                      "device": "cpu"}  # fmt: skip
            test = {"name": "f: c", "score": 2, "max_score": 2, "output": "", "visibility": "visible", "tags": []}
            result = {"score": 2, "max_score": 2, "tests": [test], "execution_time": 1}
            (folder / f"{name}.json").write_text(json.dumps({**result, "extra_data": {"provenance": record}}))


def test_a_merge_refuses_results_graded_with_other_settings_naming_them(tmp_path):
    """`sdpa-grade summary` over results graded with two settings files exits 2, names both groups, writes no CSV."""
    course = tmp_path / "course.toml"
    course.write_text("[timing]\nbudget = 9.0\n")
    students = tmp_path / "submitted"
    students.mkdir()
    for name in ("ada", "bo", "chen"):
        (students / f"{name}.py").write_text("x = 1\n")
    _results(tmp_path / "grades", {"": ["ada", "chen"], str(course): ["bo"]})
    merged = run(
        [str(BIN / "sdpa-grade"), "summary", str(students), "--json-dir", str(tmp_path / "grades"),
         "--csv", str(tmp_path / "grades.csv")]
    )  # fmt: skip
    assert merged.returncode == 2, merged.stderr
    assert "graded with different checks or settings" in merged.stderr
    assert "ada, chen (settings from defaults" in merged.stderr
    assert f"bo (settings from {course} (--config)" in merged.stderr
    assert not (tmp_path / "grades.csv").exists() and "Class summary" not in merged.stdout


def test_a_merge_of_results_graded_alike_goes_ahead_and_writes_provenance_columns(tmp_path):
    """Results graded with one set of settings merge; the CSV names each student's graded file and digests."""
    students = tmp_path / "submitted"
    students.mkdir()
    for name in ("ada", "bo"):
        (students / f"{name}.py").write_text("x = 1\n")
    _results(tmp_path / "grades", {"": ["ada", "bo"]})
    merged = run(
        [str(BIN / "sdpa-grade"), "summary", str(students), "--json-dir", str(tmp_path / "grades"),
         "--csv", str(tmp_path / "grades.csv")]
    )  # fmt: skip
    assert merged.returncode == 0, merged.stderr
    with open(tmp_path / "grades.csv", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    digest = provenance.settings_sha256(load_settings(environ={}))
    assert [(r["student"], r["graded_file"], r["sha256"], r["settings_sha256"]) for r in rows] == [
        ("ada", "attention.py", "0" * 64, digest),
        ("bo", "attention.py", "0" * 64, digest),
    ]


def test_the_dashboard_shows_each_students_graded_file_and_digests(tmp_path):
    """One small line per student: the graded file, its SHA-256's first digits, the checks' and settings' digests."""
    from autograder.course.class_results import class_results
    from autograder.render.dashboard import write_report

    submission = tmp_path / "ada.py"
    submission.write_text(REFERENCE.read_text())
    grading = read(Grading(submission, load_settings(environ={}), folder=tmp_path))
    record = provenance.record(grading)
    result = {"score": 1, "max_score": 1, "tests": [], "execution_time": 1, "extra_data": {"provenance": record}}
    write_report(tmp_path / "class.html", class_results({"ada": result}))
    page = (tmp_path / "class.html").read_text()
    line = page.split('data-value="ada.py">', 1)[1].split("</td>", 1)[0]
    assert f"<code>ada.py</code> sha256 {sha256(submission)[:12]}" in line
    assert f"checks {record['checks_sha256'][:12]}, settings {record['settings_sha256'][:12]}" in line


# --- slow: real gradings -----------------------------------------------------------------------------------------


def _batch(folder: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    command = [str(BIN / "sdpa-grade"), "batch", str(folder), "--json-dir", str(out), "--jobs", "2", *extra]
    return run(command, timeout=900)


@pytest.fixture(scope="module")
def rerun(tmp_path_factory):
    """Three students graded; one regraded alone with other settings; then one's file changed and the batch rerun."""
    base = tmp_path_factory.mktemp("rerun")
    folder, out = base / "class", base / "grades"
    folder.mkdir()
    for name in ("ada", "bo", "chen"):
        (folder / f"{name}.py").write_text(REFERENCE.read_text())
    config, other = base / "fast.toml", base / "other.toml"
    config.write_text(FAST_LIMITS)
    other.write_text(FAST_LIMITS + "\n[timing]\nbudget = 9.0\n")
    first = _batch(folder, out, "--config", str(config), "--csv", str(base / "first.csv"))
    before = {name: (out / f"{name}.json").read_bytes() for name in ("ada", "bo", "chen")}
    alone = run([str(BIN / "sdpa-grade"), "grade", str(folder / "chen.py"), "--json", str(out / "chen.json"),
                 "--config", str(other)], timeout=600)  # fmt: skip
    merge = run([str(BIN / "sdpa-grade"), "summary", str(folder), "--json-dir", str(out)], timeout=900)
    wrong = (SUBMISSIONS / "overlays" / "mistake_divide_by_dk.py").read_text()  # appended to the reference
    (folder / "ada.py").write_text(f"{REFERENCE.read_text()}\n\n{wrong}")
    second = _batch(folder, out, "--config", str(config), "--csv", str(base / "second.csv"), "--report",
                    str(base / "class.html"))  # fmt: skip
    return {"base": base, "folder": folder, "out": out, "first": first, "alone": alone, "merge": merge,
            "second": second, "before": before, "config": config, "other": other}  # fmt: skip


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_every_batch_result_names_its_file_checks_and_settings(rerun):
    """Each result of a real batch: the file's name and SHA-256 (recomputed here), the grader's version, the digests."""
    assert rerun["first"].returncode == 0, rerun["first"].stderr[-3000:]
    settings = load_settings(rerun["config"], environ={})
    for name in ("bo", "chen"):
        record = json.loads(rerun["before"][name])["extra_data"]["provenance"]
        assert record["graded_file"] == f"{name}.py"
        assert record["sha256"] == sha256(rerun["folder"] / f"{name}.py")
        assert record["checks_sha256"] == checks_sha256_by_hand()
        assert record["settings_sha256"] == provenance.settings_sha256(settings)
        assert record["grader_version"] == provenance.version() != ""
        assert record["device"] == "cpu"


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_one_grading_records_its_settings_and_a_merge_refuses_the_mix(rerun):
    """sdpa-grade grade FILE --json: the same record; a merge of it with the batch's (other settings) is refused, exit
    2."""
    assert rerun["alone"].returncode == 0, rerun["alone"].stderr[-3000:]
    merge = rerun["merge"]
    assert merge.returncode == 2, merge.stderr
    assert "ada, bo (settings from" in merge.stderr and f"chen (settings from {rerun['other']}" in merge.stderr


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_rerun_regrades_the_changed_file_and_the_changed_settings_only(rerun):
    """A plain rerun: ada's file changed and chen's settings differ, so both are graded again; bo's result is kept
    byte for byte; the first line says how many and why."""
    second = rerun["second"]
    assert second.returncode == 0, second.stderr[-3000:]
    assert "3 students, 1 already graded, 2 to grade (2 regraded: file changed 1, settings changed 1)" in (
        second.stderr
    )
    out = rerun["out"]
    assert (out / "bo.json").read_bytes() == rerun["before"]["bo"]
    ada = json.loads((out / "ada.json").read_text())
    assert ada["score"] < json.loads(rerun["before"]["ada"])["score"]  # graded on the new, wrong file
    assert ada["extra_data"]["provenance"]["sha256"] == sha256(rerun["folder"] / "ada.py")
    settings = load_settings(rerun["config"], environ={})
    assert provenance_of(out / "chen.json")["settings_sha256"] == provenance.settings_sha256(settings)
    again = _batch(rerun["folder"], out, "--config", str(rerun["config"]))
    assert "3 students, 3 already graded, 0 to grade" in again.stderr
    with open(rerun["base"] / "second.csv", encoding="utf-8") as handle:
        rows = {row["student"]: row for row in csv.DictReader(handle)}
    assert rows["ada"]["sha256"] == sha256(rerun["folder"] / "ada.py") and rows["ada"]["graded_file"] == "ada.py"
    page = (rerun["base"] / "class.html").read_text()
    assert sha256(rerun["folder"] / "ada.py")[:12] in page


def _descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        children = Path(f"/proc/{parent}/task/{parent}/children")
        try:
            kids = [int(k) for k in children.read_text().split()]
        except OSError:
            continue
        found += kids
        todo += kids
    return found


def _wait_for_a_worker(process: subprocess.Popen, deadline: float) -> None:
    """Until the grading has a sandbox worker (the checks are running): a child whose command line says so."""
    while time.monotonic() < deadline and process.poll() is None:
        for child in _descendants(process.pid):
            try:
                if b"sdpa-worker-" in Path(f"/proc/{child}/cmdline").read_bytes():
                    return
            except OSError:
                pass
        time.sleep(0.1)
    raise AssertionError("the grading never started a worker")


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("when", ["while starting", "while the checks run"])
def test_ctrl_c_on_one_grading_exits_130_and_leaves_the_results_file_as_it_was(tmp_path, when):
    """SIGINT to the grading's process group (Ctrl-C): exit 130, one line, the earlier results file byte for byte,
    no temporary file left beside it, no feedback page."""
    results = tmp_path / "results.json"
    earlier = {"score": total(), "max_score": total(), "tests": [], "output": "an earlier, good grading"}
    results.write_text(json.dumps(earlier) + "\n")
    before = results.read_bytes()
    command = [str(BIN / "sdpa-grade"), "grade", str(REFERENCE), "--json", str(results),
               "--html", str(tmp_path / "f.html")]  # fmt: skip
    grading = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    if when == "while starting":
        time.sleep(1.0)
    else:
        _wait_for_a_worker(grading, time.monotonic() + 200)
        time.sleep(1.0)
    os.killpg(grading.pid, signal.SIGINT)
    _, stderr = grading.communicate(timeout=120)
    assert grading.returncode == 130, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    assert stderr.strip().splitlines()[-1] == f"sdpa-grade grade: interrupted: nothing written ({results} is as it was)"
    assert results.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.json"]


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_ctrl_c_on_a_forced_batch_says_which_results_are_new_and_which_old(tmp_path):
    """--force stopped after its first result: the message counts the results of this run apart from the older ones
    it has not reached, and says what each command would grade."""
    folder, out = tmp_path / "class", tmp_path / "grades"
    folder.mkdir()
    for index in range(3):
        (folder / f"student{index}.py").write_text(REFERENCE.read_text())
    config = tmp_path / "fast.toml"
    config.write_text(FAST_LIMITS)
    command = [str(BIN / "sdpa-grade"), "batch", str(folder), "--jobs", "1", "--json-dir", str(out),
               "--config", str(config)]  # fmt: skip
    assert run(command, timeout=600).returncode == 0
    times = {path: path.stat().st_mtime_ns for path in out.glob("*.json")}
    batch = subprocess.Popen(
        [*command, "--force"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    deadline = time.monotonic() + 300
    while all(path.stat().st_mtime_ns == t for path, t in times.items()) and time.monotonic() < deadline:
        time.sleep(0.1)
    os.killpg(batch.pid, signal.SIGINT)
    _, stderr = batch.communicate(timeout=120)
    assert batch.returncode == 130, stderr
    new = sum(path.stat().st_mtime_ns != t for path, t in times.items())
    last = stderr.strip().splitlines()[-1]
    saved = f"sdpa-grade batch: interrupted: 3 of 3 results are saved in {out}: {new} graded by this run,"
    assert last.startswith(saved), last
    assert f"{3 - new} from before it, not graded again" in last, last
    assert "the same command (--force) grades all 3 again; without --force, 0 would be graded" in last, last
