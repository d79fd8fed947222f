"""sdpa-grade diff: a regrade into a new folder, compared with the released results, student by student."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from autograder.config import load_settings
from autograder.course.diff import diff
from tests.helpers import BIN, REFERENCE, ROOT, SUBMISSIONS, checks_of, quiz_points, run

# a class of 12: the reference, two other correct ways, and nine single classic mistakes (each the reference with
# one function replaced, as tests/grading/test_grading.py builds them); "bob" divides by d_k
OVERLAYS = {
    "bob": "mistake_divide_by_dk", "carol": "mistake_mask_inverted", "dan": "correct_einsum",
    "erin": "correct_stable_softmax", "frank": "mistake_no_scale", "grace": "mistake_zero_fill",
    "heidi": "mistake_query_axis", "ivan": "mistake_causal_flipped", "judy": "mistake_nan_rows",
    "mallory": "mistake_mask_after_softmax", "niaj": "mistake_transpose_12",
}  # fmt: skip
CLASS = ["alice", *OVERLAYS]
POINTS = load_settings(environ={}).points


def _result(points: dict[str, float], mistakes: dict[str, str] | None = None, **top) -> dict:
    tests = [
        {"name": f"f: {check}", "score": score, "max_score": POINTS[check],
         "extra_data": {"check": check, "mistake": (mistakes or {}).get(check, ""), "flag": ""}}
        for check, score in points.items()
    ]  # fmt: skip
    return {"score": sum(points.values()), "max_score": sum(POINTS[c] for c in points), "tests": tests, **top}


def _write(folder: Path, results: dict[str, dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ".sdpa-grade-output").write_text("marker\n")
    for name, result in results.items():
        (folder / f"{name}.json").write_text(json.dumps(result))
    return folder


def test_diff_names_each_change_and_nothing_else(tmp_path):
    """Checks that moved, mistakes that came and went, a status change and one-sided students; the rest unlisted."""
    full = {"scale_values": 2.0, "sdpa_causal": 3.0}
    old = _write(tmp_path / "old", {
        "same": _result(full), "down": _result(full), "up": _result({"scale_values": 0.0, "sdpa_causal": 3.0},
                                                                    {"scale_values": "divide_by_dk"}),
        "broke": _result(full), "gone": _result(full),
    })  # fmt: skip
    new = _write(tmp_path / "new", {
        "same": _result(full), "down": _result({"scale_values": 2.0, "sdpa_causal": 0.0}), "up": _result(full),
        "broke": _result({"scale_values": 0.0, "sdpa_causal": 0.0}, ungradable="no attention.py"),
        "came": _result(full),
    })  # fmt: skip
    found = diff(old, new)
    changes = {c.student: c for c in found.changes}
    assert sorted(changes) == ["broke", "came", "down", "gone", "up"]
    assert [(c.check, c.old, c.new) for c in changes["down"].checks] == [("sdpa_causal", 3.0, 0.0)]
    assert [(c.check, c.old, c.new) for c in changes["up"].checks] == [("scale_values", 0.0, 2.0)]
    assert changes["up"].vanished == ["divide_by_dk"] and changes["up"].appeared == []
    assert (changes["broke"].old_status, changes["broke"].new_status) == ("graded", "ungradable")
    assert changes["broke"].flagged == ["ungradable"]
    assert (changes["gone"].new_status, changes["came"].old_status) == ("missing", "missing")
    assert changes["gone"].checks == [] and changes["gone"].shift is None
    assert (found.compared, found.up, found.down) == (4, 1, 2)
    assert found.mean_shift == pytest.approx((0 - 3 + 2 - 5) / 4)


def test_diff_command_prints_the_summary_first_and_writes_the_csv(tmp_path):
    """The real command: the summary line first, one line per changed student, the CSV one row per check moved."""
    full = {"scale_values": 2.0, "sdpa_causal": 3.0}
    old = _write(tmp_path / "old", {"a": _result(full), "b": _result(full), "c=1": _result(full)})
    new = _write(tmp_path / "new", {"a": _result(full), "b": _result({"scale_values": 0.0, "sdpa_causal": 3.0},
                                                                     {"scale_values": "divide_by_dk"}),
                                    "c=1": _result(full)})  # fmt: skip
    done = run([str(BIN / "sdpa-grade"), "diff", str(old), str(new), "--csv", str(tmp_path / "d.csv")])
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].endswith("1 of 3 change: 0 up, 1 down, mean -0.7")
    assert len(lines) == 2 and lines[1].strip().startswith("b: 5 -> 3 (-2); scale_values 2 -> 0; mistake appeared: ")
    rows = list(csv.DictReader((tmp_path / "d.csv").open(newline="", encoding="utf-8")))
    assert [(r["student"], r["check"], r["old_points"], r["new_points"]) for r in rows if r["check"]] == [
        ("b", "scale_values", "2", "0")
    ]
    assert [r["what"] for r in rows if not r["check"]][0].startswith("mistake appeared: ")


@pytest.mark.parametrize(
    "args, says",
    [
        (["diff", "nowhere", "."], "is not a folder"),
        (["diff", "docs", "docs"], "holds no results files"),
        (["diff", "docs"], "takes two results folders"),
        (["diff", "a", "b", "--force"], "--force does not apply"),
    ],
)
def test_diff_refuses_folders_it_cannot_compare(args, says):
    """Exit 2 with the reason for a folder that is missing, holds no results, or options that do not apply."""
    done = run([str(BIN / "sdpa-grade"), *args], cwd=ROOT)
    assert done.returncode == 2
    assert says in done.stderr


# ---- real regrades of a real class, each into a folder of its own ------------------------------------------------


@pytest.fixture(scope="module")
def released(tmp_path_factory) -> tuple[Path, Path]:
    """A class of three (correct, divide by d_k, inverted mask), graded with the defaults: the released results."""
    top = tmp_path_factory.mktemp("course")
    folder = top / "class"
    folder.mkdir()
    reference = REFERENCE.read_text()
    shutil.copy(REFERENCE, folder / "alice.py")
    for name, overlay in OVERLAYS.items():
        (folder / f"{name}.py").write_text(f"{reference}\n\n{(SUBMISSIONS / 'overlays' / f'{overlay}.py').read_text()}")
    out = top / "released"
    done = run([str(BIN / "sdpa-grade"), "batch", str(folder), "--json-dir", str(out)], timeout=900)
    assert done.returncode == 0, done.stderr
    return folder, out


def _points_of(folder: Path, name: str) -> dict[str, float]:
    result = json.loads((folder / f"{name}.json").read_text())
    return {t["extra_data"]["check"]: t["score"] for t in result["tests"]}


def _regrade(folder: Path, out: Path, settings: str | None, *extra: str) -> str:
    args = [str(BIN / "sdpa-grade"), "batch", str(folder), "--json-dir", str(out), *extra]
    if settings is not None:
        (out.parent / f"{out.name}.toml").write_text(settings)
        args += ["--config", str(out.parent / f"{out.name}.toml")]
    done = run(args, timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _differ(old: Path, new: Path) -> set[str]:
    """The students whose points differ between two results folders, read from the files alone (the test's own
    comparison, beside the one under test)."""
    differ = set()
    for path in old.glob("*.json"):
        before, after = json.loads(path.read_text()), json.loads((new / path.name).read_text())
        if (before["score"], before["max_score"], _points_of(old, path.stem)) != (
            after["score"],
            after["max_score"],
            _points_of(new, path.stem),
        ):
            differ.add(path.stem)
    return differ


def _moved(found) -> dict[str, set[tuple[str, float | None, float | None]]]:
    return {c.student: {(m.check, m.old, m.new) for m in c.checks} for c in found.changes}


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_changed_point_value_a_check_switched_off_and_a_stricter_tolerance(released, tmp_path):
    """scale_values worth 5, sdpa_causal worth 0 and variance_rtol a million times stricter (a real submission that
    passed variance_close fails it): exactly those three checks move, for those who earned them; the CSV holds the
    same; the released folder is untouched."""
    folder, old = released
    before = {p.name: p.read_bytes() for p in old.iterdir() if p.is_file()}
    new = tmp_path / "regraded"
    _regrade(folder, new, "[points]\nscale_values = 5\nsdpa_causal = 0\n[tolerance]\nvariance_rtol = 1e-7\n")
    found = diff(old, new)
    assert {c.student for c in found.changes} == _differ(old, new)
    # what changed between the two runs, from the results' provenance: the settings' digest, and exactly these keys
    assert [key for key, _, _ in found.runs] == [
        "settings_sha256", "points.scale_values", "points.sdpa_causal", "tolerance.variance_rtol"
    ]  # fmt: skip
    done = run([str(BIN / "sdpa-grade"), "diff", str(old), str(new), "--csv", str(tmp_path / "d.csv")])
    rows = list(csv.DictReader((tmp_path / "d.csv").open(newline="", encoding="utf-8")))
    assert {(r["student"], r["check"], float(r["old_points"]), float(r["new_points"])) for r in rows} == {
        (c.student, m.check, m.old, m.new) for c in found.changes for m in c.checks
    }
    assert done.stdout.splitlines()[0].endswith(
        f"{len(found.changes)} of {len(CLASS)} change: {found.up} up, {found.down} down, mean {found.mean_shift:+.1f}"
    )
    assert {p.name: p.read_bytes() for p in old.iterdir() if p.is_file()} == before
    expected = {}
    for name in CLASS:
        earned = _points_of(old, name)
        moved = {
            (check, POINTS[check], now)
            for check, now in (("scale_values", 5.0), ("sdpa_causal", 0.0), ("variance_close", 0.0))
            if earned[check]
        }
        if moved:
            expected[name] = moved
    assert {"alice", "bob"} <= set(expected) and ("scale_values", 2, 5.0) not in expected["bob"]
    assert _moved(found) == expected
    assert all(c.new_max == c.old_max + 5 - POINTS["scale_values"] - POINTS["sdpa_causal"] for c in found.changes)
    assert all(not (c.appeared or c.vanished or c.flagged or c.unflagged) for c in found.changes)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_replaced_file_in_a_batch_with_diff_and_report(released, tmp_path):
    """bob's file replaced by a correct one, regraded into a new folder with --diff OLD --report: only bob changes,
    up to full marks, and the dashboard lists him in its changes section; the released folder is untouched."""
    folder, old = released
    before = {p.name: p.read_bytes() for p in old.iterdir() if p.is_file()}
    changed = tmp_path / "class"
    shutil.copytree(folder, changed)
    shutil.copy(ROOT / "examples" / "class" / "alice.py", changed / "bob.py")
    new = tmp_path / "after"
    report = tmp_path / "class.html"
    stdout = _regrade(changed, new, None, "--diff", str(old), "--report", str(report))
    found = diff(old, new)
    assert [c.student for c in found.changes] == ["bob"]
    bob = found.changes[0]
    assert bob.new_score == bob.new_max - quiz_points() and bob.shift > 0  # an attention.py: no knowledge check
    lost = checks_of(json.loads((old / "bob.json").read_text()))
    assert {m.check for m in bob.checks} == {t["extra_data"]["check"] for t in lost if t["score"] < t["max_score"]}
    assert bob.vanished == ["divide_by_dk"]
    assert f"1 of {len(CLASS)} change: 1 up, 0 down" in stdout
    page = report.read_text(encoding="utf-8")
    assert 'id="changes"' in page and 'data-changed="bob"' in page and 'data-changed="alice"' not in page
    assert {p.name: p.read_bytes() for p in old.iterdir() if p.is_file()} == before


def test_batch_refuses_to_diff_against_its_own_folder(tmp_path):
    """--diff OLD where OLD is the batch's own --json-dir would compare a folder with itself overwritten: refused."""
    out = _write(tmp_path / "out", {"a": _result({"scale_values": 2.0})})
    folder = tmp_path / "class"
    folder.mkdir()
    shutil.copy(ROOT / "examples" / "class" / "alice.py", folder / "a.py")
    done = run([str(BIN / "sdpa-grade"), "batch", str(folder), "--json-dir", str(out), "--diff", str(out)])
    assert done.returncode == 2
    assert "this run's own results folder" in done.stderr


def test_diff_says_which_settings_changed_between_the_runs(tmp_path):
    """From the results' provenance: the settings' digest differs, and the one key that moved is named."""
    full = {"scale_values": 2.0}

    def graded(points: float, digest: str) -> dict:
        settings = {"points": {"scale_values": points}, "limits": {"call_timeout": 10.0}}
        provenance = {"settings_sha256": digest, "checks_sha256": "c1", "settings": settings}
        return _result(full, extra_data={"provenance": provenance})

    old = _write(tmp_path / "old", {"a": graded(2.0, "s1")})
    new = _write(tmp_path / "new", {"a": graded(5.0, "s2")})
    found = diff(old, new)
    assert found.runs == [("settings_sha256", ["s1"], ["s2"]), ("points.scale_values", ["2.0"], ["5.0"])]
    assert found.changes == []  # the same points were earned: nobody's grade moved


def test_the_summary_counts_every_student_on_either_side(tmp_path):
    """'N of M change': M is every student in either folder (a one-sided student is a change of M), never fewer
    than N; the mean is over the students on both sides."""
    from autograder.render.diff import headline

    full = {"scale_values": 2.0}
    old = _write(tmp_path / "old", {"a": _result(full), "gone": _result(full)})
    new = _write(tmp_path / "new", {"a": _result(full), "came": _result(full), "also": _result(full)})
    found = diff(old, new)
    assert (len(found.changes), found.students, found.compared) == (3, 4, 1)
    assert headline(found) == "3 of 4 change: 0 up, 0 down, mean +0.0"


def test_a_late_penalty_that_moved_is_on_the_students_line(tmp_path):
    """A total that moved partly by a late penalty says so (old -> new penalty), in the line and in the CSV."""
    from autograder.render.diff import line, write_csv

    def late(points: float, penalty: float) -> dict:
        result = _result({"scale_values": points})
        late = {"raw_score": points, "late_penalty": penalty, "score": points - penalty}
        return {**result, "score": points - penalty, "extra_data": {"late": late}}

    old = _write(tmp_path / "old", {"carol": late(2.0, 0.5), "dan": late(2.0, 0.5)})
    new = _write(tmp_path / "new", {"carol": _result({"scale_values": 2.0}), "dan": late(2.0, 0.5)})
    found = diff(old, new)
    assert [c.student for c in found.changes] == ["carol"]
    assert line(found.changes[0]) == "carol: 1.5 -> 2 (+0.5); late penalty 0.5 -> 0"
    write_csv(tmp_path / "d.csv", found)
    rows = list(csv.DictReader((tmp_path / "d.csv").open(newline="", encoding="utf-8")))
    assert [r["what"] for r in rows] == ["late penalty 0.5 -> 0"]


def test_a_hashed_file_name_is_shown_as_the_students_name(tmp_path):
    """A student whose result file needed a hash ('=1+1' in _1_1-<hash>.json) is named as the batch names them,
    in the line and (neutralised) in the CSV, as the plain CSV does; a file with no name recorded keeps its stem."""
    from autograder.course.roster import result_names
    from autograder.render.diff import line, write_csv

    file = result_names(["=1+1"])["=1+1"].removesuffix(".json")
    named = {**_result({"scale_values": 2.0}), "extra_data": {"student": "=1+1"}}
    old = _write(tmp_path / "old", {file: named, "b": _result({"scale_values": 2.0})})
    new = _write(tmp_path / "new", {file: {**named, "score": 0.0}, "b": _result({"scale_values": 0.0})})
    found = diff(old, new)
    assert [line(c).split(":")[0] for c in found.changes] == ["=1+1", "b"]
    write_csv(tmp_path / "d.csv", found)
    rows = list(csv.DictReader((tmp_path / "d.csv").open(newline="", encoding="utf-8")))
    assert {r["student"] for r in rows} == {"b", "'=1+1"}


def test_the_settings_keys_that_differ_keep_their_underscores_on_the_dashboard(tmp_path):
    """The dashboard's Changes section names a setting as the command does: 'setting points.scale_values'."""
    pytest.importorskip("matplotlib", reason="the dashboard draws with matplotlib (the [report] extra)")
    from autograder.course.class_results import class_results
    from autograder.render.dashboard import dashboard
    from autograder.render.diff import lines

    def graded(points: float, digest: str) -> dict:
        provenance = {"settings_sha256": digest, "settings": {"points": {"scale_values": points}}}
        return _result({"scale_values": 2.0}, extra_data={"provenance": provenance})

    old = _write(tmp_path / "old", {"a": graded(2.0, "s1")})
    new = _write(tmp_path / "new", {"a": graded(5.0, "s2")})
    found = diff(old, new)
    assert "  setting points.scale_values differs: 2.0 -> 5.0" in lines(found)
    page = dashboard(class_results({"a": graded(5.0, "s2")}), {"a": "a.html"}, found)
    assert "setting points.scale_values" in page and "settings sha256" in page
