"""sdpa-grade --diff: a regrade into a new folder, compared with the released results, student by student."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from autograder.config import load_settings
from autograder.diff import diff
from tests.helpers import BIN, ROOT, run

CLASS = ["alice", "bob", "carol"]  # correct; divides by d_k; inverts the mask
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
    done = run([str(BIN / "sdpa-grade"), "--diff", str(old), str(new), "--csv", str(tmp_path / "d.csv")])
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
        (["--diff", "nowhere", "."], "is not a folder"),
        (["--diff", "docs", "docs"], "holds no results files"),
        (["--diff", "docs"], "takes two results folders"),
        (["--diff", "a", "b", "--force"], "--force does not apply"),
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
    for name in CLASS:
        shutil.copy(ROOT / "examples" / "class" / f"{name}.py", folder / f"{name}.py")
    out = top / "released"
    done = run([str(BIN / "sdpa-grade"), "--batch", str(folder), "--json-dir", str(out)], timeout=600)
    assert done.returncode == 0, done.stderr
    return folder, out


def _points_of(folder: Path, name: str) -> dict[str, float]:
    result = json.loads((folder / f"{name}.json").read_text())
    return {t["extra_data"]["check"]: t["score"] for t in result["tests"]}


def _regrade(folder: Path, out: Path, settings: str | None, *extra: str) -> str:
    args = [str(BIN / "sdpa-grade"), "--batch", str(folder), "--json-dir", str(out), *extra]
    if settings is not None:
        (out.parent / f"{out.name}.toml").write_text(settings)
        args += ["--config", str(out.parent / f"{out.name}.toml")]
    done = run(args, timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _moved(found) -> dict[str, set[tuple[str, float | None, float | None]]]:
    return {c.student: {(m.check, m.old, m.new) for m in c.checks} for c in found.changes}


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_changed_point_value_and_a_check_switched_off(released, tmp_path):
    """scale_values worth 5 and sdpa_causal worth 0: exactly those two checks move, for those who earned them."""
    folder, old = released
    new = tmp_path / "regraded"
    _regrade(folder, new, "[points]\nscale_values = 5\nsdpa_causal = 0\n")
    found = diff(old, new)
    expected = {}
    for name in CLASS:
        earned = _points_of(old, name)
        moved = set()
        if earned["scale_values"]:
            moved.add(("scale_values", POINTS["scale_values"], 5.0))
        if earned["sdpa_causal"]:
            moved.add(("sdpa_causal", POINTS["sdpa_causal"], 0.0))
        if moved:
            expected[name] = moved
    # bob fails both checks: his total and his maximum (5 - 2 - 3 = +0) are unchanged, so he is not listed
    assert _moved(found) == expected and "bob" not in expected
    assert all(c.new_max == c.old_max + 5 - POINTS["scale_values"] - POINTS["sdpa_causal"] for c in found.changes)
    assert all(not (c.appeared or c.vanished or c.flagged or c.unflagged) for c in found.changes)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_stricter_tolerance_fails_a_real_submission(released, tmp_path):
    """variance_rtol made a million times stricter: variance_close fails for all who passed it, nothing else moves."""
    folder, old = released
    new = tmp_path / "strict"
    _regrade(folder, new, "[tolerance]\nvariance_rtol = 1e-7\n")
    found = diff(old, new)
    expected = {
        n: {("variance_close", POINTS["variance_close"], 0.0)} for n in CLASS if _points_of(old, n)["variance_close"]
    }
    assert expected, "some student passed variance_close with the default tolerance"
    assert _moved(found) == expected
    assert found.up == 0 and found.down == len(expected)


@pytest.mark.slow
@pytest.mark.timeout(900)
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
    assert bob.new_score == bob.new_max and bob.shift > 0
    lost = json.loads((old / "bob.json").read_text())["tests"]
    assert {m.check for m in bob.checks} == {t["extra_data"]["check"] for t in lost if t["score"] < t["max_score"]}
    assert bob.vanished == ["divide_by_dk"]
    assert "1 of 3 change: 1 up, 0 down" in stdout
    page = report.read_text(encoding="utf-8")
    assert 'id="changes"' in page and 'data-changed="bob"' in page and 'data-changed="alice"' not in page
    assert {p.name: p.read_bytes() for p in old.iterdir() if p.is_file()} == before


def test_batch_refuses_to_diff_against_its_own_folder(tmp_path):
    """--diff OLD where OLD is the batch's own --json-dir would compare a folder with itself overwritten: refused."""
    out = _write(tmp_path / "out", {"a": _result({"scale_values": 2.0})})
    folder = tmp_path / "class"
    folder.mkdir()
    shutil.copy(ROOT / "examples" / "class" / "alice.py", folder / "a.py")
    done = run([str(BIN / "sdpa-grade"), "--batch", str(folder), "--json-dir", str(out), "--diff", str(out)])
    assert done.returncode == 2
    assert "this batch's own results folder" in done.stderr
