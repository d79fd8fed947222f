"""The deadline policy: due date, grace, none / zero / per day / per hour with a cap, extensions, and times; and one
submission graded alone (`sdpa-grade grade FILE`) under a [deadline]: where its time comes from, and why not."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from autograder.assignment.deadline import DeadlineError, apply, parse, parse_nbgrader_timestamp, recorded_policy
from tests.helpers import BIN, run, total

DUE = "2026-12-01T23:59:00-05:00"
TOTAL = total()  # the assignment's most, from the checks' points and the settings
DUE_AT = datetime(2026, 12, 1, 23, 59, tzinfo=timezone(timedelta(hours=-5)))


def _policy(**table):
    return parse({"due": DUE, **table}, "course.toml")


# a class: on time, 2 hours late, 3 days late, 10 days late, and 3 days late with a 4-day extension
TIMES = {
    "ontime": DUE_AT - timedelta(minutes=1),
    "hours2": DUE_AT + timedelta(hours=2),
    "days3": DUE_AT + timedelta(days=3),
    "days10": DUE_AT + timedelta(days=10),
    "extended": DUE_AT + timedelta(days=3),
}
EXTENSIONS = {"extended": "2026-12-05T23:59:00-05:00"}


@pytest.mark.parametrize(
    "policy, table, expected",
    [
        ("none", {}, {"ontime": 40, "hours2": 40, "days3": 40, "days10": 40, "extended": 40}),
        ("zero", {}, {"ontime": 40, "hours2": 0, "days3": 0, "days10": 0, "extended": 40}),
        # 10% a day begun, 0 after 5 days: 2 hours is 1 day begun
        (
            "per_day",
            {"percent": 10, "max_late": 5},
            {"ontime": 40, "hours2": 36, "days3": 28, "days10": 0, "extended": 40},
        ),  # fmt: skip
        # 5% an hour begun, 0 after 48 hours
        (
            "per_hour",
            {"percent": 5, "max_late": 48},
            {"ontime": 40, "hours2": 36, "days3": 0, "days10": 0, "extended": 40},
        ),  # fmt: skip
    ],
)
def test_each_final_score_under_each_policy(policy, table, expected):
    """Each student's final score out of a raw 40, for each policy, with one student's extension honoured."""
    deadline = _policy(policy=policy, extensions=EXTENSIONS, **table)
    scores = {name: apply(deadline, name, 40.0, moment).score for name, moment in TIMES.items()}
    assert scores == expected


def test_the_fields_a_result_carries():
    """raw score, penalty, final score, when, how late and the extension used, and the policy it was decided under
    (so that an extension granted after grading is decided again from the record, not from a later run's settings)."""
    late = apply(_policy(policy="per_day", percent=10), "hours2", 40.0, TIMES["hours2"])
    assert late.fields() == {"raw_score": 40.0, "late_penalty": 4.0, "score": 36.0,
                             "submitted_at": "2026-12-02T01:59:00-05:00", "hours_late": 2.0, "extension": "",
                             "missing_time": False, "time_problem": "", "due": "2026-12-01T23:59:00-05:00",
                             "grace_minutes": 0.0, "policy": "per_day", "percent": 10.0, "max_late": 0.0,
                             "settings_extension": ""}  # fmt: skip
    assert recorded_policy(late.fields()) == _policy(policy="per_day", percent=10)
    extended = apply(_policy(extensions=EXTENSIONS), "extended", 40.0, TIMES["extended"])
    assert extended.extension == "2026-12-05T23:59:00-05:00" and extended.hours_late == 0


def test_grace_forgives_only_inside_it():
    """15 minutes' grace: 10 minutes late is on time; 20 minutes late is late by 20 minutes (one hour begun)."""
    deadline = _policy(policy="per_hour", percent=10, grace_minutes=15)
    assert apply(deadline, "a", 10.0, DUE_AT + timedelta(minutes=10)).score == 10
    late = apply(deadline, "a", 10.0, DUE_AT + timedelta(minutes=20))
    assert (late.score, late.hours_late) == (9.0, pytest.approx(1 / 3, abs=1e-3))


def test_a_missing_time_is_flagged_and_costs_nothing():
    """With a deadline set and no time for the student: full raw score, flagged."""
    late = apply(_policy(policy="zero"), "a", 40.0, None)
    assert (late.score, late.late_penalty, late.missing_time) == (40.0, 0.0, True)
    assert apply(parse({}, "defaults"), "a", 40.0, None).missing_time is False  # no deadline: nothing needed


@pytest.mark.parametrize(
    "table, says",
    [
        ({"due": "2026-12-01 23:59"}, "deadline.due '2026-12-01 23:59' from course.toml: give its time zone"),
        ({"due": "tomorrow"}, "deadline.due 'tomorrow' from course.toml: not an ISO 8601"),
        ({"due": DUE, "percent": 150}, "deadline.percent 150 from course.toml: expected at most 100"),
        ({"due": DUE, "percent": -1}, "deadline.percent -1 from course.toml: expected a non-negative"),
        ({"due": DUE, "policy": "half"}, "deadline.policy 'half' from course.toml: expected one of none, zero"),
        (
            {"due": DUE, "extensions": {"bob": "soon"}},
            "deadline.extensions.bob 'soon' from course.toml: not an ISO 8601",
        ),
        ({"extensions": {"bob": DUE}}, "extensions need a due date"),
        ({"due": DUE, "late": 1}, "unknown setting deadline.late"),
        (
            {"due": DUE, "grace_minute": 1},
            "unknown setting deadline.grace_minute in course.toml; did you mean deadline.grace_minutes?",
        ),  # fmt: skip
    ],
)
def test_bad_settings_name_the_key(table, says):
    """A bad date, a percentage over 100, an unknown policy: refused, naming the key and the file."""
    with pytest.raises(DeadlineError, match=None) as caught:
        parse(table, "course.toml")
    assert says in str(caught.value)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("2026-12-02 01:59:00.123456 UTC", datetime(2026, 12, 2, 1, 59, 0, 123456, tzinfo=timezone.utc)),
        ("2026-12-02 01:59:00 UTC", datetime(2026, 12, 2, 1, 59, tzinfo=timezone.utc)),
        ("2026-12-02 01:59:00.5 -0500", datetime(2026, 12, 2, 1, 59, 0, 500000, tzinfo=timezone(timedelta(hours=-5)))),
        ("2026-12-02 01:59:00", datetime(2026, 12, 2, 1, 59, tzinfo=timezone.utc)),
        ("2026-12-02 01:59:00 CET", None),
        ("yesterday", None),
        ("", None),
    ],
)
def test_nbgrader_timestamps(text, expected):
    """nbgrader's timestamp_format (the default '%Y-%m-%d %H:%M:%S.%f %Z'), an offset, or none (UTC)."""
    assert parse_nbgrader_timestamp(text) == expected


def test_the_dashboard_shows_each_late_penalty():
    """The students table's score cell says how a late score was reached; an on-time student's says nothing more."""
    pytest.importorskip("matplotlib", reason="the dashboard draws with matplotlib (the [report] extra)")
    from autograder.course.class_results import class_results
    from autograder.render.dashboard import dashboard
    from autograder.report import stamp

    deadline = _policy(policy="per_day", percent=10)
    results = {name: stamp({"score": 40.0, "max_score": TOTAL, "tests": []}, apply(deadline, name, 40.0, TIMES[name]))
               for name in ("ontime", "hours2")}  # fmt: skip
    page = dashboard(class_results(results), {name: f"{name}.html" for name in results})
    assert "raw 40, late penalty 4 (2.0 h late)" in page
    assert page.count('class="muted late"') == 1


# ---- the batch's notes on a policy that does nothing it seems to do (no grading: summary over results) ----

RESULT = {"score": 40.0, "max_score": TOTAL, "output": "", "tests": []}


def _summary(folder, out, *extra):

    return run([str(BIN / "sdpa-grade"), "summary", str(folder), "--json-dir", str(out), *extra])


@pytest.mark.timeout(60)
def test_a_summary_without_the_deadline_reads_the_late_decision_of_record(graded_class):
    """A result the batch decided under a [deadline] (bob, 2 hours late), summarised by a run with no deadline (no
    --config): the record's late decision stands (no raw score comes back, no second decision), and the CSV says so."""

    late = apply(_policy(policy="per_day", percent=10), "bob", 40.0, TIMES["hours2"])
    folder, out = graded_class(RESULT)
    (out / "bob.json").write_text(json.dumps({**RESULT, "score": late.score, "extra_data": {"late": late.fields()}}))
    done = _summary(folder, out, "--csv", str(out.parent / "grades.csv"))
    assert done.returncode == 0, done.stderr
    assert "raw scores are back" not in done.stderr
    assert json.loads((out / "bob.json").read_text())["score"] == 36.0
    assert "bob,36.0," in (out.parent / "grades.csv").read_text()


@pytest.mark.timeout(120)
def test_a_policy_that_takes_nothing_off_is_noted(graded_class, tmp_path):
    """An extension naming no student, a percent with no policy, times for a student not in the class, and --times
    with no deadline: each accepted by the batch that decides the late penalties, each told (stderr), naming the key
    or the student."""

    folder, out = graded_class(RESULT, names=("alice",))
    times = tmp_path / "times.csv"
    times.write_text(f"student,submitted_at\nalice,{DUE}\nalise,{DUE}\n", encoding="utf-8")
    course = tmp_path / "course.toml"
    course.write_text(f'[deadline]\ndue = "{DUE}"\npercent = 10\n[deadline.extensions]\nalicee = "{DUE}"\n')
    batch = [str(BIN / "sdpa-grade"), "batch", str(folder), "--json-dir", str(out)]
    done = run([*batch, "--config", str(course), "--times", str(times)], timeout=240)
    assert done.returncode == 0, done.stderr
    assert "warning: deadline.percent is 10 but deadline.policy is none" in done.stderr
    assert "warning: deadline.extensions names no student in" in done.stderr and "alicee" in done.stderr
    assert f"warning: --times {times} names 1 student not in" in done.stderr and "alise" in done.stderr
    done = run([*batch, "--times", str(times)], timeout=240)
    assert f"warning: --times {times} is not used: the settings have no deadline.due" in done.stderr


@pytest.mark.timeout(60)
@pytest.mark.parametrize("roster_text, says", [(None, "cannot be read"), ("a,b\n1,2\n", "not a Canvas gradebook")])
def test_an_unusable_roster_is_refused_before_any_grading(graded_class, tmp_path, roster_text, says):
    """A roster that is missing or not the LMS's export: exit 2 naming it, before a student is graded."""
    folder, out = graded_class(RESULT, names=("alice",))
    (folder / "newcomer").mkdir()  # no result yet: a batch that graded before looking at the roster would grade it
    roster = tmp_path / "roster.csv"
    if roster_text is not None:
        roster.write_text(roster_text, encoding="utf-8")

    done = run([str(BIN / "sdpa-grade"), "batch", str(folder), "--json-dir", str(out), "--csv", str(tmp_path / "c"),
                "--csv-format", "canvas", "--roster", str(roster)])  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert f"roster {roster}" in done.stderr and says in done.stderr
    assert not (out / "newcomer.json").exists() and not (tmp_path / "c").exists()


def test_a_late_student_is_told_the_penalty_in_one_sentence():
    """The late line (hours late, the share of the raw score taken off, the final score) in results.json's output, the
    terminal's table and the HTML page; applied again, it replaces itself; with no deadline, it is gone."""
    from autograder.render.terminal import table
    from autograder.render.text import late_sentence
    from autograder.report import stamp

    result = {"score": 47.0, "max_score": TOTAL, "output": "Graded by the hidden checks.", "tests": []}
    late = apply(_policy(policy="per_day", percent=10), "hours2", 47.0, TIMES["hours2"])
    sentence = f"Late: 2.0 h after the due date; 10% of 47 taken off (4.7): 42.3/{TOTAL:g}."
    assert late_sentence(late.fields(), TOTAL) == sentence
    stamped = stamp(result, late)
    assert stamped["output"] == f"Graded by the hidden checks.\n{sentence}"
    assert table(stamped).splitlines()[-1] == sentence
    again = stamp(stamped, apply(_policy(policy="per_day", percent=20), "hours2", 47.0, TIMES["hours2"]))
    assert again["output"] == "Graded by the hidden checks.\nLate: 2.0 h after the due date; 20% of 47 taken off" \
        f" (9.4): 37.6/{TOTAL:g}."  # fmt: skip
    extended = _policy(policy="per_day", percent=10, extensions=EXTENSIONS)
    assert late_sentence(apply(extended, "extended", 47.0, TIMES["extended"]).fields(), TOTAL) == (
        "Submitted by your extended due date (2026-12-05T23:59:00-05:00): nothing taken off."
    )
    assert "no late penalty was applied" in late_sentence(apply(extended, "x", 47.0, None).fields(), TOTAL)
    assert late_sentence(apply(extended, "ontime", 47.0, TIMES["ontime"]).fields(), TOTAL) == ""
    pytest.importorskip("jinja2", reason="the page is a jinja2 template (the [report] extra)")
    from autograder.render.html import student_page

    page = student_page("hours2", stamped)
    assert page.count("10% of 47 taken off (4.7)") == 1 and 'class="late"' in page


def test_max_late_is_more_than_that_many_days():
    """max_late = 5 (per day): exactly 5 days late is 5 days begun (50% off); 5 days and a minute is 6, scored 0,
    as docs/instructor.md says ('more than 5 days')."""
    deadline = _policy(policy="per_day", percent=10, max_late=5)
    assert apply(deadline, "x", 40.0, DUE_AT + timedelta(days=5)).score == 20.0
    assert apply(deadline, "x", 40.0, DUE_AT + timedelta(days=5, minutes=1)).score == 0.0


# ---- lateness worded at a precision that never reads 0 when a penalty is taken ----


@pytest.mark.parametrize(
    "late, words",
    [
        (timedelta(seconds=13), "13 s"),
        (timedelta(milliseconds=100), "less than 1 s"),
        (timedelta(minutes=4, seconds=13), "4 min 13 s"),
        (timedelta(hours=2), "2.0 h"),
        (timedelta(hours=1, minutes=1), "1.0 h"),
    ],
)
def test_lateness_is_worded_at_a_precision_that_is_never_zero(late, words):
    """13 seconds late under 10% a day: 4 of 40 taken off, worded '13 s', never '0.0 h', in the student's sentence,
    the instructor's dashboard and nbgrader's log."""
    from autograder.assignment.deadline import late_by
    from autograder.render.text import late_sentence

    fields = apply(_policy(policy="per_day", percent=10), "x", 40.0, DUE_AT + late).fields()
    assert fields["late_penalty"] == 4.0 and fields["hours_late"] > 0
    assert late_by(fields["hours_late"]) == words
    assert late_sentence(fields, TOTAL) == f"Late: {words} after the due date; 10% of 40 taken off (4): 36/{TOTAL:g}."
    pytest.importorskip("matplotlib", reason="the dashboard draws with matplotlib (the [report] extra)")
    from autograder.course.class_results import class_results
    from autograder.render.dashboard import dashboard
    from autograder.report import stamp

    result = stamp({"score": 40.0, "max_score": TOTAL, "tests": []}, apply(_policy(policy="per_day", percent=10),
                                                                          "x", 40.0, DUE_AT + late))  # fmt: skip
    assert f"raw 40, late penalty 4 ({words} late)" in dashboard(class_results({"x": result}), {"x": "x.html"})


# ---- --submitted-at: ISO 8601, or nbgrader's own format (what timestamp.txt holds) ----


@pytest.mark.parametrize(
    "text, expected",
    [
        ("2026-03-01T12:00:00-05:00", datetime(2026, 3, 1, 17, 0, tzinfo=timezone.utc)),
        ("2026-03-01 12:00:00.123456 UTC", datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=timezone.utc)),
        ("2026-03-01 12:00:00.123456 +0100", datetime(2026, 3, 1, 11, 0, 0, 123456, tzinfo=timezone.utc)),
        ("2026-03-01 12:00:00 -05:00", datetime(2026, 3, 1, 17, 0, tzinfo=timezone.utc)),
    ],
)
def test_a_given_submission_time_may_be_written_as_nbgrader_writes_it(text, expected):
    """--submitted-at takes ISO 8601 with an offset, and nbgrader's timestamp.txt format (a zone name UTC, or an
    offset); a time without its zone is still refused, naming both forms."""
    from autograder.assignment.deadline import parse_given_time

    assert parse_given_time(text, "Invalid --submitted-at") == expected
    with pytest.raises(DeadlineError, match="Invalid --submitted-at '2026-03-01 12:00:00'.*nbgrader"):
        parse_given_time("2026-03-01 12:00:00", "Invalid --submitted-at")


# ---- Gradescope: an extension granted there applies under the settings' own due date ----


def _metadata(tmp_path, created, own_due=None):

    user = {"email": "student@example.com", "id": 1234, "name": "Student User"}
    if own_due is not None:
        user["assignment"] = {"due_date": own_due}
    path = tmp_path / "submission_metadata.json"
    assignment = {"due_date": "2026-12-01T23:59:00.000000-05:00", "title": "SDPA"}
    path.write_text(json.dumps({"created_at": created, "users": [user], "assignment": assignment}))
    return path


def test_a_gradescope_extension_applies_under_the_settings_due_date(tmp_path):
    """Settings due 2026-12-01, Gradescope's own due date the same, the student's 3 days later (an extension granted
    in Gradescope): 2 days late is on time; 4 days late is 1 day late by the extension; without one, 2 days late."""
    from autograder.assignment.deadline import gradescope_time

    deadline = _policy(policy="per_day", percent=10)
    two_days = (DUE_AT + timedelta(days=2)).isoformat()
    extended = (DUE_AT + timedelta(days=3)).isoformat()
    student, submitted, moved = gradescope_time(_metadata(tmp_path, two_days, extended), deadline)
    late = apply(moved, student, 50.0, submitted)
    assert (late.score, late.extension) == (50.0, (DUE_AT + timedelta(days=3)).isoformat())
    four_days = (DUE_AT + timedelta(days=4)).isoformat()
    student, submitted, moved = gradescope_time(_metadata(tmp_path, four_days, extended), deadline)
    assert apply(moved, student, 50.0, submitted).score == 45.0
    student, submitted, moved = gradescope_time(_metadata(tmp_path, two_days), deadline)
    assert apply(moved, student, 50.0, submitted).score == 40.0


# ---- one submission graded alone (sdpa-grade grade FILE) under a [deadline]: where its time comes from ----

COURSE_TOML = '[deadline]\ndue = "2026-03-01T12:00:00Z"\npolicy = "per_day"\npercent = 10\n'
NOT_A_NOTEBOOK = "not a notebook"  # ungradable (score 0): the time is still taken, and the grading is quick


def _grade(path, tmp_path, *extra):
    (tmp_path / "course.toml").write_text(COURSE_TOML)
    out = tmp_path / "out.json"
    done = run([str(BIN / "sdpa-grade"), "grade", str(path), "--config", str(tmp_path / "course.toml"),
                "--json", str(out), *extra], timeout=250)  # fmt: skip
    return done, json.loads(out.read_text())["extra_data"]["late"]


def _collected(tmp_path, course_file="nbgrader_config.py"):
    """submitted/alice/sdpa/sdpa.ipynb with nbgrader's timestamp.txt beside it, in a course (``course_file`` beside
    submitted/; None: a plain folder)."""
    folder = tmp_path / "course" / "submitted" / "alice" / "sdpa"
    folder.mkdir(parents=True)
    if course_file:
        (tmp_path / "course" / course_file).write_text("c = get_config()\n")
    (folder / "sdpa.ipynb").write_text(NOT_A_NOTEBOOK)
    (folder / "timestamp.txt").write_text("2026-03-02 12:00:01.500000 UTC")
    return folder / "sdpa.ipynb"


@pytest.mark.timeout(120)
def test_a_collected_notebook_graded_alone_takes_nbgraders_time(tmp_path):
    """submitted/alice/sdpa/sdpa.ipynb in an nbgrader course, graded alone: its time is nbgrader's timestamp.txt
    beside it (a day and a second late: 2 days begun), and the student is alice, as the batch names her."""
    done, late = _grade(_collected(tmp_path), tmp_path)
    assert done.returncode == 2, done.stderr  # ungradable: nothing to grade, its results file written all the same
    assert late["submitted_at"] == "2026-03-02T12:00:01.500000+00:00" and not late["missing_time"]
    assert late["hours_late"] == pytest.approx(24 + 1.5 / 3600)


@pytest.mark.timeout(120)
def test_a_notebook_outside_an_nbgrader_course_says_why_no_time_was_taken(tmp_path):
    """The same folders with no nbgrader_config.py or gradebook.db beside submitted/: its timestamp.txt is not
    believed, no penalty is taken, and the output says why (stderr, and the result's time_problem)."""
    done, late = _grade(_collected(tmp_path, course_file=None), tmp_path)
    assert late["missing_time"] and late["late_penalty"] == 0
    assert "not in an nbgrader course's submitted/<student>/sdpa/ folder" in late["time_problem"]
    assert f"sdpa-grade grade: no late penalty applied: {late['time_problem']}" in done.stderr


@pytest.mark.timeout(120)
def test_submitted_at_takes_nbgraders_format(tmp_path):
    """--submitted-at "2026-03-01 12:00:00.123456 UTC", as nbgrader's timestamp.txt holds it, is taken; so is an
    offset (+0100)."""
    path = tmp_path / "attention.py"
    done, late = _grade(path, tmp_path, "--submitted-at", "2026-03-01 12:00:13.123456 UTC")
    assert "Invalid --submitted-at" not in done.stderr, done.stderr
    assert late["submitted_at"] == "2026-03-01T12:00:13.123456+00:00" and late["late_penalty"] == 0  # scored 0
    done, late = _grade(path, tmp_path, "--submitted-at", "2026-03-01 13:00:13 +0100")
    assert late["submitted_at"] == "2026-03-01T13:00:13+01:00", done.stderr
