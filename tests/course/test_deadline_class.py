"""A class with nbgrader timestamps on time, 2 hours, 3 days and 10 days late, and late with an extension: the same
final scores from `sdpa-grade batch --csv` and from `nbgrader autograde` + `nbgrader export`, under each policy."""

from __future__ import annotations

import csv
import os
import shutil

import nbformat
import pytest

from tests.helpers import BIN, ROOT, answered, nbgrader, run

pytestmark = pytest.mark.slow

DUE_UTC = "2026-12-02 04:59:00"  # 2026-12-01T23:59:00-05:00
TIMES = {  # nbgrader's timestamp.txt, its default format
    "ontime": "2026-12-02 04:00:00.000000 UTC",
    "hours2": "2026-12-02 06:59:00.000000 UTC",
    "days3": "2026-12-05 04:59:00.000000 UTC",
    "days10": "2026-12-12 04:59:00.000000 UTC",
    "extended": "2026-12-05 04:59:00.000000 UTC",  # 3 days late, inside a 4-day extension
}
HEAD = '[deadline]\ndue = "2026-12-01T23:59:00-05:00"\n'
EXTENSION = '[deadline.extensions]\nextended = "2026-12-05T23:59:00-05:00"\n'
# policy -> (its settings, the fraction of the raw score each student keeps)
POLICIES = {
    "none": ('policy = "none"\n', {"ontime": 1, "hours2": 1, "days3": 1, "days10": 1, "extended": 1}),
    "zero": ('policy = "zero"\n', {"ontime": 1, "hours2": 0, "days3": 0, "days10": 0, "extended": 1}),
    "per_day": (
        'policy = "per_day"\npercent = 10\nmax_late = 5\n',
        {"ontime": 1, "hours2": 0.9, "days3": 0.7, "days10": 0, "extended": 1},
    ),
    "per_hour": (
        'policy = "per_hour"\npercent = 5\nmax_late = 48\n',
        {"ontime": 1, "hours2": 0.9, "days3": 0, "days10": 0, "extended": 1},
    ),
}


@pytest.fixture(scope="module")
def collected(tmp_path_factory):
    """An nbgrader course whose submitted/ holds five correct notebooks, each with its nbgrader timestamp."""
    base = tmp_path_factory.mktemp("late")
    course = base / "course"
    shutil.copytree(
        ROOT / "assignments",
        course,
        ignore=shutil.ignore_patterns("release", "submitted", "autograded", "feedback", "exchange", "gradebook.db"),
    )
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    nbgrader("generate_assignment", "sdpa", "--force", cwd=course, env=env)
    nbgrader("db", "assignment", "add", "sdpa", f"--duedate={DUE_UTC} UTC", cwd=course, env=env)
    release = nbformat.read(course / "release" / "sdpa" / "sdpa.ipynb", as_version=4)
    source = nbformat.read(course / "source" / "sdpa" / "sdpa.ipynb", as_version=4)
    for name, stamp in TIMES.items():
        folder = course / "submitted" / name / "sdpa"
        folder.mkdir(parents=True)
        nbformat.write(answered(release, source, {}), folder / "sdpa.ipynb")
        (folder / "timestamp.txt").write_text(stamp)
    for policy, (table, _) in POLICIES.items():
        (course / f"{policy}.toml").write_text(HEAD + table + EXTENSION)
    # sdpa-grade: the class graded once; each policy's test decides again over the same results (a regrade of the
    # record's late decisions, no submission graded again: [deadline] is not part of the settings' digest)
    grades = base / "grades"
    done = run([str(BIN / "sdpa-grade"), "batch", str(course / "submitted"), "--json-dir", str(grades),
                "--config", str(course / "none.toml")], timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return course, env, grades


def _rows(path) -> dict[str, dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return {row.get("student_id") or row["student"]: row for row in csv.DictReader(handle)}


# nbgrader's path autogrades the class again for each policy it is tried under (its penalty is charged at autograde):
# two, a whole score taken and a share per hour; its late plugin computes every policy with sdpa-grade's own
# deadline.apply, which sdpa-grade's path is held to under all four
NBGRADER_POLICIES = ("zero", "per_hour")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("policy", POLICIES)
def test_both_paths_give_each_final_score(collected, tmp_path, policy):
    """Under none, zero, per_day and per_hour: each final score exact on sdpa-grade's path; under zero and per_hour on
    nbgrader's too, and the penalties equal."""
    course, env, grades = collected
    keeps = POLICIES[policy][1]
    settings = course / f"{policy}.toml"
    args = [str(BIN / "sdpa-grade"), "batch", str(course / "submitted"), "--json-dir", str(grades)]
    args += ["--config", str(settings), "--csv", str(tmp_path / f"{policy}.csv")]
    done = run(args, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "0 to grade" in done.stderr, done.stderr
    ours = _rows(tmp_path / f"{policy}.csv")
    for student, kept in keeps.items():
        raw = float(ours[student]["raw_score"])
        assert raw > 0
        assert float(ours[student]["score"]) == pytest.approx(raw * kept), (policy, student)
    assert ours["extended"]["extension"].startswith("2026-12-05T23:59:00")
    assert float(ours["hours2"]["hours_late"]) == 2.0
    if policy not in NBGRADER_POLICIES:
        return
    # nbgrader: autograde with the same settings file, then export
    nbgrader("autograde", "sdpa", "--force", f"--GradeNotebook.settings_file={settings}", cwd=course, env=env)
    nbgrader("export", f"--to={tmp_path / f'{policy}-nbgrader.csv'}", cwd=course, env=env)
    theirs = _rows(tmp_path / f"{policy}-nbgrader.csv")
    for student, kept in keeps.items():
        nb_raw = float(theirs[student]["raw_score"])
        assert float(theirs[student]["score"]) == pytest.approx(nb_raw * kept), (policy, student)
        assert float(theirs[student]["late_submission_penalty"]) == pytest.approx(nb_raw * (1 - kept))
