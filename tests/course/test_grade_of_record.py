"""The grade of record (autograder/course/decisions.py, of_record.py, decide.py): decided once by the batch, held and
overridden by the instructor, read by every export whatever options the later commands are given."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
from pathlib import Path

import pytest

from autograder.course import decisions
from autograder.course.decisions import Decision
from tests.helpers import BIN, ROOT, nbgrader, run
from tests.lti_platform import LEARNER, LtiPlatform, rsa_pem

CLASS = ROOT / "examples" / "class"  # alice (right), bob (no sqrt), carol (d_k and a mask), mallory (patches torch)
DUE = "2026-12-01T23:59:00+00:00"
POLICY = f'[deadline]\ndue = "{DUE}"\npolicy = "per_day"\npercent = 10\n'
TIMES = {"alice": "2026-12-01T20:00:00+00:00", "bob": "2026-12-02T05:00:00+00:00",
         "carol": "2026-12-04T05:00:00+00:00", "mallory": "2026-12-01T20:00:00+00:00"}  # fmt: skip


def _sdpa(*words: object, timeout: float = 120):
    return run([str(BIN / "sdpa-grade"), *map(str, words)], timeout=timeout)


# ---- the decisions, folded (no grading) ----


def _d(verb: str, student: str = "ann", **fields) -> Decision:
    return Decision(verb, student, "2026-12-06T12:00:00+00:00", fields.pop("reason", "why"), **fields)


def test_a_students_standing_follows_their_decisions_in_order():
    """The last hold or clear decides; an undo takes back the student's last decision in force (a clear undone holds
    again); another student's decisions count nothing; a hold of flagged work holds only the result it was made for."""
    log = [_d("hold"), _d("override", score=40.0), _d("hold", "bo"), _d("clear"), _d("undo")]
    found = decisions.standing(log, "ann", graded_at="t1")
    assert (found.held, found.override.score) == ("why", 40.0)
    assert decisions.standing([*log, _d("undo"), _d("undo")], "ann", "t1") == decisions.Standing()
    flagged = _d("hold", result="t1", by=decisions.GRADER)
    assert decisions.standing([flagged], "ann", "t1").held == "why"
    assert decisions.standing([flagged], "ann", "t2").held == "", "a regrade is not held by the old result's flag"
    assert decisions.standing([_d("extend", until=DUE)], "ann", "t1").extension.until == DUE


def test_a_decisions_file_that_is_not_one_is_refused_by_name(tmp_path):
    """decisions.jsonl is the instructor's record: a line that is not a decision is an error naming the file, never a
    record silently read as empty."""
    decisions.add(tmp_path, [_d("hold")])
    assert decisions.read(tmp_path) == [_d("hold")]
    for text in ('{"verb": "delete", "student": "ann", "at": "x"}\n', "not json\n", '{"verb": "override",'
                 ' "student": "ann", "at": "x", "score": "ten"}\n', "[1]\n", '{"verb": "hold", "x": 1}\n'):  # fmt: skip
        (tmp_path / decisions.DECISIONS).write_text(text)
        with pytest.raises(decisions.DecisionsError, match=r"decisions\.jsonl, line 1: .*instructor's record"):
            decisions.read(tmp_path)


# ---- a real class, graded once under a late policy, then decided and exported ----


@pytest.fixture(scope="module")
def record(tmp_path_factory):
    """examples/class graded by `sdpa-grade batch` under a 10%-a-day policy (bob 5 hours late, carol 3 days late):
    (class folder, results folder, the batch's stderr). mallory's integrity flags hold her by default."""
    base = tmp_path_factory.mktemp("record")
    folder = base / "class"
    shutil.copytree(CLASS, folder)
    (base / "course.toml").write_text(POLICY)
    (base / "times.csv").write_text("student,submitted_at\n" + "".join(f"{s},{t}\n" for s, t in TIMES.items()))
    out = base / "grades"
    done = _sdpa("batch", folder, "--json-dir", out, "--config", base / "course.toml", "--times", base / "times.csv",
                 timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return folder, out, done.stderr


@pytest.fixture
def decided(record, tmp_path):
    """A copy of the graded class's results for one test to decide on: (class folder, results folder)."""
    folder, out, _ = record
    mine = tmp_path / "grades"
    shutil.copytree(out, mine)
    return folder, mine


def _scores(path: Path) -> dict[str, str]:
    return {row["student"]: row["score"] for row in csv.DictReader(io.StringIO(path.read_text()))}


def _summary_csv(folder: Path, out: Path, tmp_path: Path, *extra: object) -> dict[str, str]:
    grades = tmp_path / "summary.csv"
    done = _sdpa("summary", folder, "--json-dir", out, "--csv", grades, *extra)
    assert done.returncode == 0, done.stderr
    return _scores(grades)


@pytest.mark.timeout(120)
def test_flagged_work_is_held_out_of_every_export_until_cleared(record, decided, tmp_path):
    """mallory (integrity flags) is held by the batch itself: no score in the CSV, not pushed, said so; a clear
    releases her to every export; an undo holds her again."""
    _, _, said = record
    folder, out = decided
    assert "held for review (flagged; no export includes them until 'sdpa-grade clear'): mallory" in said
    grades = tmp_path / "grades.csv"
    done = _sdpa("summary", folder, "--json-dir", out, "--csv", grades)
    assert done.returncode == 0, done.stderr
    row = next(r for r in csv.DictReader(io.StringIO(grades.read_text())) if r["student"] == "mallory")
    assert (row["score"], row["status"]) == ("", "held")
    offline = _sdpa("push", folder, "--json-dir", out, "--offline")
    assert "mallory: 50 of" not in offline.stdout and "not sent: mallory: held for review" in offline.stderr
    cleared = _sdpa("clear", folder, "mallory", "--json-dir", out, "--reason", "torch patched only in a test helper")
    assert cleared.returncode == 0, cleared.stderr
    assert "mallory's grade of record is 50 of" in cleared.stdout
    assert _summary_csv(folder, out, tmp_path)["mallory"] == "50.0"
    assert "mallory: 50 of" in _sdpa("push", folder, "--json-dir", out, "--offline").stdout
    assert _sdpa("undo", folder, "mallory", "--json-dir", out).returncode == 0
    assert _summary_csv(folder, out, tmp_path)["mallory"] == ""


@pytest.mark.timeout(120)
def test_the_late_decision_is_made_once_whatever_later_commands_are_given(record, decided, tmp_path):
    """bob 5 h late (53 - 10%), carol 3 days late (47 - 30%): summary and push without the policy, or with another,
    read the record; a batch without [deadline] or --times keeps it and says so; a batch with a new policy decides
    again, from the times the record holds."""
    folder, out = decided
    expected = {"alice": "55.0", "bob": "47.7", "carol": "32.9", "mallory": ""}
    other = tmp_path / "other.toml"
    other.write_text(POLICY.replace("percent = 10", "percent = 50"))
    assert _summary_csv(folder, out, tmp_path) == expected
    assert _summary_csv(folder, out, tmp_path, "--config", other) == expected
    offline = _sdpa("push", folder, "--json-dir", out, "--offline", "--config", other)
    assert "bob: 47.7 of" in offline.stdout and "carol: 32.9 of" in offline.stdout, offline.stdout
    refused = _sdpa("push", folder, "--json-dir", out, "--offline", "--times", tmp_path / "none.csv")
    assert refused.returncode == 2 and "--times does not apply to push: it is an option of batch" in refused.stderr
    kept = _sdpa("batch", folder, "--json-dir", out, "--csv", tmp_path / "kept.csv")
    assert kept.returncode == 0, kept.stderr
    assert "4 result(s) keep the late decision in their record" in kept.stderr
    assert _scores(tmp_path / "kept.csv") == expected
    again = _sdpa("batch", folder, "--json-dir", out, "--config", other, "--csv", tmp_path / "again.csv")
    assert again.returncode == 0, again.stderr
    assert "the grade of record changed for 2 student(s): bob 47.7 -> 26.5, carol 32.9 -> 0" in again.stderr
    assert _scores(tmp_path / "again.csv") == {**expected, "bob": "26.5", "carol": "0.0"}


@pytest.mark.timeout(120)
def test_an_override_and_an_extension_show_their_reasons_and_are_undone(decided, tmp_path):
    """override sets bob's score with a reason, extend re-decides carol's lateness from the record's policy; both show
    on the dashboard and in the diff against the released results; undo takes each back."""
    pytest.importorskip("matplotlib", reason="the dashboard draws with matplotlib (the [report] extra)")
    folder, out = decided
    released = tmp_path / "released"
    shutil.copytree(out, released)
    done = _sdpa("override", folder, "bob", "50", "--json-dir", out, "--reason", "regrade request #12")
    assert done.returncode == 0 and "bob's grade of record is 50 of" in done.stdout and "(was 47.7)" in done.stdout
    done = _sdpa("extend", folder, "carol", "--until", "2026-12-04T12:00:00+00:00", "--json-dir", out, "--reason",
                 "doctor's note")  # fmt: skip
    assert done.returncode == 0 and "carol's grade of record is 47 of" in done.stdout, done.stdout + done.stderr
    shown = _sdpa("diff", released, out)
    said = "bob: 47.7 -> 50 (+2.3); instructor's decisions: none -> score set to 50 (regrade request #12)"
    assert said in shown.stdout, shown.stdout
    assert "extended to 2026-12-04T12:00:00+00:00 (doctor's note)" in shown.stdout, shown.stdout
    page = tmp_path / "class.html"
    assert _sdpa("summary", folder, "--json-dir", out, "--report", page).returncode == 0
    text = page.read_text()
    assert "score set to 50 (regrade request #12)" in text and "doctor&#39;s note" in text
    for name in ("bob", "carol"):
        assert _sdpa("undo", folder, name, "--json-dir", out).returncode == 0
    assert _summary_csv(folder, out, tmp_path) == {"alice": "55.0", "bob": "47.7", "carol": "32.9", "mallory": ""}
    assert "0 of 4 change" in _sdpa("diff", released, out).stdout


@pytest.mark.parametrize(
    "words, says",
    [
        (["hold", "zed", "--reason", "x"], "no student zed in the class (have: alice, bob, carol, mallory)"),
        (["hold", "bob"], "hold keeps its reason with the grade: give --reason TEXT"),
        (["override", "bob", "99", "--reason", "x"], "the score 99.0 is not between 0 and"),
        (["extend", "bob", "--until", "tomorrow", "--reason", "x"], "--until 'tomorrow' is not a time"),
        (["extend", "bob", "--until", "2026-12-09T00:00:00", "--reason", "x"], "has no offset"),
        (["undo", "bob"], "bob has no decision to undo"),
        (["clear", "bob"], "bob's grade is not held"),
    ],
)
@pytest.mark.timeout(120)
def test_a_decision_that_cannot_be_made_is_refused_and_nothing_is_kept(decided, words, says):
    folder, out = decided
    before = {path.name: path.read_bytes() for path in out.iterdir()}
    verb, *rest = words
    done = _sdpa(verb, folder, *rest, "--json-dir", out)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"sdpa-grade {verb}: " in done.stderr and says in done.stderr and "nothing kept" in done.stderr
    assert {path.name: path.read_bytes() for path in out.iterdir()} == before


@pytest.mark.timeout(120)
def test_every_export_gives_the_same_final_scores(record, decided, tmp_path):
    """Late (bob), extended (carol), held then cleared (alice), overridden (bob) and held (mallory): the plain CSV,
    Canvas's and Moodle's files, each results.json (Gradescope's form), nbgrader's export (the shipped course's
    configuration) and the LMS after a push hold the same final scores out of the same maximum, and the held student
    is in none of them."""
    folder, out = decided
    for words in (["extend", "carol", "--until", "2026-12-03T00:00:00+00:00", "--reason", "flu"],
                  ["hold", "alice", "--reason", "look again"], ["clear", "alice"],
                  ["override", "bob", "45", "--reason", "copied a helper"]):  # fmt: skip
        verb, *rest = words
        assert _sdpa(verb, folder, *rest, "--json-dir", out).returncode == 0
    final = {"alice": 55.0, "bob": 45.0, "carol": 37.6}  # carol: 29 h after the extension, 2 days begun: 20%
    plain = {name: float(score) for name, score in _summary_csv(folder, out, tmp_path).items() if score}
    assert plain == final
    results = {path.stem: json.loads(path.read_text()) for path in out.glob("*.json")}
    assert {name: results[name]["score"] for name in final} == final
    (most,) = {result["max_score"] for result in results.values()}  # one maximum: the record's
    rows = csv.DictReader(io.StringIO((tmp_path / "summary.csv").read_text()))
    assert {float(row["max_score"]) for row in rows if row["score"]} == {most}

    exported = _nbgrader_export(folder, out, tmp_path)
    assert {name: float(row["score"]) for name, row in exported.items() if row["score"]} == final
    assert (exported["mallory"]["score"], exported["mallory"]["status"]) == ("", "held")
    assert {float(row["max_score"]) for row in exported.values() if row["score"]} == {most}
    bob = exported["bob"]  # overridden: the record's raw score and late penalty, and the override as the score
    assert float(bob["raw_score"]) - float(bob["late_submission_penalty"]) == pytest.approx(47.7)

    canvas, moodle = tmp_path / "canvas.csv", tmp_path / "moodle.csv"
    canvas.write_text("Student,ID,SIS User ID,SIS Login ID,Section,sdpa (7)\n" + "".join(
        f"{n.title()},{i},{i},{n},S1,\n" for i, n in enumerate(TIMES)))  # fmt: skip
    moodle.write_text("First name,Last name,ID number,Username,Email address\n" + "".join(
        f"{n.title()},X,{n},{n},{n}@uni.edu\n" for n in TIMES))  # fmt: skip
    for form, roster in (("canvas", canvas), ("moodle", moodle)):
        written = tmp_path / f"{form}-out.csv"
        done = _sdpa("summary", folder, "--json-dir", out, "--csv", written, "--csv-format", form, "--roster", roster)
        assert done.returncode == 0, done.stderr
        assert "note: 1 held for review, not in" in done.stderr and "mallory" in done.stderr
        rows = list(csv.reader(io.StringIO(written.read_text())))
        column = rows[0].index("sdpa (7)" if form == "canvas" else "sdpa")
        key = rows[0].index("SIS Login ID" if form == "canvas" else "ID number")
        got = {row[key]: float(row[column]) for row in rows[1:] if row[key]}
        assert got == final, form
        if form == "canvas":
            assert float(rows[1][column]) == most, rows[1]  # Points Possible: the maximum of record

    private, public = rsa_pem()
    key_path = tmp_path / "tool.pem"
    key_path.write_bytes(private)
    key_path.chmod(0o600)
    members = [{"user_id": f"u{i}", "roles": [LEARNER], "login_id": n, "email": f"{n}@uni.edu", "status": "Active"}
               for i, n in enumerate(TIMES)]  # fmt: skip
    with LtiPlatform(public, members) as lms:
        config = tmp_path / "lti.toml"
        config.write_text(lms.settings(str(key_path), identity="login"))
        done = _sdpa("push", folder, "--json-dir", out, "--config", config)
        assert done.returncode == 1, done.stderr  # not everyone sent: mallory is held
        assert "not sent: mallory: held for review" in done.stderr
        assert lms.gradebook() == {"Scaled dot-product attention": final}
        assert [item["scoreMaximum"] for item in lms.book.items.values()] == [most]


def _nbgrader_export(folder: Path, out: Path, tmp_path: Path) -> dict[str, dict[str, str]]:
    """`nbgrader export` in a course with the shipped nbgrader_config.py, its gradebook holding the class's students
    and the assignment, the record in ``out``: each student's row."""
    course = tmp_path / "course"
    course.mkdir()
    shutil.copy(ROOT / "assignments" / "nbgrader_config.py", course)
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}  # alembic must be on PATH
    (course / "students.csv").write_text("id,last_name,first_name,email\n" + "".join(
        f"{name},X,{name.title()},{name}@uni.edu\n" for name in TIMES))  # fmt: skip
    nbgrader("db", "student", "import", "students.csv", cwd=course, env=env)
    nbgrader("db", "assignment", "add", "sdpa", f"--duedate={DUE}", cwd=course, env=env)
    exported = tmp_path / "nbgrader.csv"
    plain = nbgrader("export", f"--to={exported}", cwd=course, env=env)  # no record in course/submitted-grades
    assert "no grade of record in" in plain.stderr and "nbgrader's gradebook is exported as it is" in plain.stderr
    assert {row["student_id"]: row["score"] for row in csv.DictReader(io.StringIO(exported.read_text()))} == (
        dict.fromkeys(TIMES, "0.0")  # nbgrader's: no submission in its gradebook
    )
    nbgrader("export", f"--to={exported}", f"--RecordExport.class_folder={folder}", f"--RecordExport.results={out}",
             cwd=course, env=env)  # fmt: skip
    return {row["student_id"]: row for row in csv.DictReader(io.StringIO(exported.read_text()))}


@pytest.mark.timeout(120)
def test_every_path_runs_the_same_stages_and_decides_lateness_in_one(record, tmp_path):
    """The batch's results and one `sdpa-grade grade` (Gradescope's bundle runs that verb) record the same stage list,
    grade.STAGES, the late decision among them: bob 5 hours late loses 10% on both, decided by the same stage.
    nbgrader's autograde runs grade.grade too (its lateness is nbgrader's late plugin: the stage decides nothing
    there)."""
    import inspect

    from autograder.grade import STAGES, decide_late
    from autograder.nbgrader_path import autograde
    from autograder.release import gradescope

    folder, out, _ = record
    names = [stage.__name__ for stage in STAGES]
    assert decide_late in STAGES
    batch = json.loads((out / "bob.json").read_text())
    assert batch["extra_data"]["provenance"]["stages"] == names
    (tmp_path / "course.toml").write_text(POLICY)
    one = tmp_path / "bob.json"
    done = _sdpa("grade", folder / "bob.py", "--json", one, "--config", tmp_path / "course.toml", "--submitted-at",
                 TIMES["bob"])  # fmt: skip
    assert done.returncode == 0, done.stderr
    single = json.loads(one.read_text())
    assert single["extra_data"]["provenance"]["stages"] == names
    assert (single["score"], single["extra_data"]["late"]["late_penalty"]) == (47.7, 5.3)
    assert batch["extra_data"]["late"]["late_penalty"] == 5.3
    assert "grade(path, settings" in inspect.getsource(autograde)
    assert '/sdpa-grade" grade "$ROOT/submission"' in inspect.getsource(gradescope)
