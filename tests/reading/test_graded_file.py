"""Which file of a submission is graded: one rule on every path, and a flag naming every other candidate.

The rule (autograder/read/submission.py, ``choose``; docs/instructor.md, "Which file is graded"): the
assignment's own names first (attention.py, then the released notebook's name), the shallowest first,
never checkpoints or archive debris; the student is flagged when other candidates remain. The walk is
bounded ([limits] folder_depth, folder_files) and checked as it goes.
"""

from __future__ import annotations

import csv
import json
import shutil

import pytest

from autograder.assignment.paths import NOTEBOOK, TEMPLATE
from autograder.course.batch import students
from autograder.course.class_results import class_results
from autograder.read.handed_in import read_submission
from autograder.read.submission import Ungradable
from tests.helpers import BIN, REFERENCE, ROOT, checks_part, run
from tests.reading.common import put

OWN_PY, OWN_NOTEBOOK = TEMPLATE.name, NOTEBOOK.name  # attention.py, sdpa.ipynb: where the project names them
SOLVED_NOTEBOOK = ROOT / NOTEBOOK  # the source notebook: its solution cells grade like the reference


def notebook(code: str) -> str:
    """A notebook of one code cell."""
    cell = {"cell_type": "code", "metadata": {}, "source": code, "outputs": [], "execution_count": None}
    return json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


@pytest.fixture
def nested():
    """``nested(top, levels)``: ``top/d/d/.../d``, returned, and removed afterwards, files and all. Each step is one
    short path (the chain is built and taken apart at its top: pathlib's mkdir, os.makedirs and rmtree recurse)."""
    made = []

    def make(top, levels):
        top.mkdir(parents=True, exist_ok=True)
        (top / "d").mkdir()
        for _ in range(levels - 1):  # top/d becomes top/d/d
            (top / "x").mkdir()
            (top / "d").rename(top / "x" / "d")
            (top / "x").rename(top / "d")
        made.append(top)
        return top.joinpath(*["d"] * levels)

    yield make
    for top in made:
        while (top / "d").is_dir():  # top/d/d becomes top/d, the files of top/d removed
            for entry in (top / "d").iterdir():
                if not entry.is_dir():
                    entry.unlink()
            if (top / "d" / "d").is_dir():
                (top / "d" / "d").rename(top / "x")
            (top / "d").rmdir()
            if (top / "x").is_dir():
                (top / "x").rename(top / "d")


def chosen(folder, tmp_path) -> str:
    """The source the read stage hands the worker, for a folder."""
    out = tmp_path / "read"
    out.mkdir(exist_ok=True)
    return read_submission(folder, out).source.read_text()


def choice_of(submission, **limits):
    """The rule's choice for ``submission`` under the default limits, with ``limits`` changed."""
    from autograder.config import load_settings
    from autograder.read.submission import choose

    settings = load_settings(environ={})
    return choose(submission, settings.replace("limits", **limits).limits if limits else settings.limits)


# each case: the student's folder, the file graded, every candidate in the rule's order
CASES = {
    "stray notebook": ({OWN_NOTEBOOK: notebook("GRADED = 1"), "Untitled.ipynb": notebook("print(1)")},
                       OWN_NOTEBOOK, [OWN_NOTEBOOK, "Untitled.ipynb"]),
    "copy of the notebook": ({OWN_NOTEBOOK: notebook("GRADED = 1"), "sdpa (1).ipynb": notebook("COPY = 1")},
                             OWN_NOTEBOOK, [OWN_NOTEBOOK, "sdpa (1).ipynb"]),
    "py beside the notebook": ({OWN_PY: "GRADED = 1\n", OWN_NOTEBOOK: notebook("NOTEBOOK = 1")},
                               OWN_PY, [OWN_PY, OWN_NOTEBOOK]),
    "stub in a_old/": ({OWN_PY: "GRADED = 1\n", f"a_old/{OWN_PY}": "STUB = 1\n"},
                       OWN_PY, [OWN_PY, f"a_old/{OWN_PY}"]),
    "stub in Archive/": ({OWN_PY: "GRADED = 1\n", f"Archive/{OWN_PY}": "STUB = 1\n"},
                         OWN_PY, [OWN_PY, f"Archive/{OWN_PY}"]),
    "own name deeper than a stray one": ({"Untitled.ipynb": notebook("print(1)"),
                                          f"sdpa/{OWN_NOTEBOOK}": notebook("GRADED = 1")},
                                         f"sdpa/{OWN_NOTEBOOK}", [f"sdpa/{OWN_NOTEBOOK}", "Untitled.ipynb"]),
}  # fmt: skip


@pytest.mark.timeout(30)
@pytest.mark.parametrize("case", CASES)
def test_the_rule_picks_the_assignments_file_and_names_every_candidate(case, tmp_path):
    """The assignment's own name, the shallowest first, is read; every other candidate is named, the chosen first."""
    files, graded, candidates = CASES[case]
    folder = put(tmp_path / "alice", files)
    assert "GRADED = 1" in chosen(folder, tmp_path)
    choice = choice_of(folder)
    assert choice.relative == graded and list(choice.candidates) == candidates


@pytest.mark.timeout(30)
def test_checkpoints_and_mac_zip_debris_are_never_candidates(tmp_path):
    """A Mac zip's __MACOSX/._sdpa.ipynb, .ipynb_checkpoints, .DS_Store: never graded, never named, no flag."""
    folder = put(tmp_path / "alice", {
        f"sdpa/{OWN_NOTEBOOK}": notebook("GRADED = 1"),
        f"__MACOSX/sdpa/._{OWN_NOTEBOOK}": "\x00\x05\x16\x07 not a notebook",
        f"sdpa/._{OWN_NOTEBOOK}": "\x00\x05\x16\x07 not a notebook",
        f".ipynb_checkpoints/{OWN_NOTEBOOK.removesuffix('.ipynb')}-checkpoint.ipynb": notebook("OLD = 1"),
        f"sdpa/.ipynb_checkpoints/{OWN_PY}": "OLD = 1\n",
        ".DS_Store": "\x00\x00",
    })  # fmt: skip
    (folder / "__MACOSX" / "sdpa" / f"._{OWN_NOTEBOOK}").write_bytes(b"\x00\x05\x16\x07\xff\xfe")
    assert "GRADED = 1" in chosen(folder, tmp_path)
    choice = choice_of(folder)
    assert choice.relative == f"sdpa/{OWN_NOTEBOOK}" and choice.others == () and choice.stopped is None


@pytest.mark.timeout(30)
def test_a_py_and_a_notebook_of_one_name_at_a_batch_folders_top_are_one_student(tmp_path):
    """both.py + both.ipynb: one student "both", the .py graded (as attention.py before the notebook), both named."""
    put(tmp_path, {"both.py": "GRADED = 1\n", "both.ipynb": notebook("print(1)"), "carol.ipynb": notebook("x = 1")})
    roster = students(tmp_path)
    assert list(roster) == ["both", "carol"]
    assert "GRADED = 1" in chosen(roster["both"], tmp_path)
    choice = choice_of(roster["both"])
    assert choice.relative == "both.py" and list(choice.candidates) == ["both.py", "both.ipynb"]
    assert choice_of(roster["carol"]).others == ()


@pytest.mark.timeout(60)
def test_the_search_is_bounded_in_depth_without_recursion(tmp_path, nested):
    """Folders nested past folder_depth: the walk stops there (a loop, no recursion: sdpa-grade below meets 1,200);
    a file above it is graded and flagged with the bound, and one found only below it leaves the student
    ungradable, naming the bound."""
    deep = tmp_path / "alice"
    bottom = nested(deep, 40)
    (bottom / OWN_PY).write_text("TOO_DEEP = 1\n")
    with pytest.raises(Ungradable, match=r"folder_depth = \d+") as raised:
        chosen(deep, tmp_path)
    assert not raised.value.missing  # the student's upload, not a wrong path
    (deep / "d" / OWN_NOTEBOOK).write_text(notebook("GRADED = 1"))
    assert "GRADED = 1" in chosen(deep, tmp_path)
    choice = choice_of(deep, folder_depth=4)
    assert choice.relative == f"d/{OWN_NOTEBOOK}" and choice.stopped == ("folder_depth", 4)


@pytest.mark.timeout(60)
def test_the_search_is_bounded_in_files(tmp_path):
    """A folder of more entries than folder_files: the walk stops there, checked as it reads (the graded file
    at the top is still found first, and flagged with the bound)."""
    folder = put(tmp_path / "alice", {OWN_PY: "GRADED = 1\n", f"deep/{OWN_NOTEBOOK}": notebook("x = 1")})
    for i in range(60):
        (folder / f"junk{i:02d}.txt").write_text("")
    choice = choice_of(folder, folder_files=50)
    assert choice.relative == OWN_PY and choice.stopped == ("folder_files", 50)
    assert choice_of(folder).stopped is None and choice_of(folder).others == (f"deep/{OWN_NOTEBOOK}",)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_sdpa_grade_on_too_deep_or_too_full_a_folder_is_ungradable_with_the_bound(tmp_path, nested):
    """As Gradescope's run script grades its upload: a results file, the usual maximum, exit 2 and a reason naming
    the bound, never a grader error (today: RecursionError, 0/0)."""
    deep = tmp_path / "submission"
    bottom = nested(deep, 1200)
    (bottom / OWN_PY).write_text(REFERENCE.read_text())
    out = tmp_path / "results.json"
    result = run([str(BIN / "sdpa-grade"), "grade", str(deep), "--json", str(out)], timeout=100)
    results = json.loads(out.read_text())
    assert result.returncode == 2, result.stderr[-2000:]
    assert "grader_error" not in results and results["score"] == 0 and results["max_score"] > 0
    assert "folder_depth" in results["ungradable"] and "RecursionError" not in result.stderr
    full = put(tmp_path / "full", {f"z/{OWN_PY}": REFERENCE.read_text(), **{f"a{i}.txt": "" for i in range(30)}})
    config = tmp_path / "course.toml"
    config.write_text("[limits]\nfolder_files = 20\n")
    result = run([str(BIN / "sdpa-grade"), "grade", str(full), "--json", str(out), "--config", str(config)],
                 timeout=100)  # fmt: skip
    assert result.returncode == 2 and "folder_files = 20" in json.loads(out.read_text())["ungradable"]


@pytest.mark.timeout(30)
def test_the_flag_reaches_the_summary_and_the_dashboards_flags():
    """extra_data.candidates becomes the student's flag, naming every candidate; graded_file names the graded one."""
    from autograder.render.terminal import summary

    extra = {"graded_file": OWN_NOTEBOOK, "candidates": [OWN_NOTEBOOK, "Untitled.ipynb"]}
    result = {"score": 1, "max_score": 1, "execution_time": 1, "tests": [], "extra_data": extra}
    stopped = {"graded_file": OWN_PY, "search_stopped": {"limit": "folder_files", "value": 50}}
    plain = {**result, "extra_data": {"graded_file": OWN_PY}}
    stats = class_results({"alice": result, "bob": plain, "carol": {**result, "extra_data": stopped}})
    alice, carol = stats.flags
    assert alice.student == "alice" and OWN_NOTEBOOK in alice.detail and "Untitled.ipynb" in alice.detail
    assert carol.student == "carol" and "limits.folder_files = 50" in carol.detail and OWN_PY in carol.detail
    text = summary(stats)
    review = text.split("Flagged for review", 1)[1]
    assert "alice" in review and "Untitled.ipynb" in review and "carol" in review and "bob" not in review


@pytest.fixture(scope="module")
def flagged_batch(tmp_path_factory):
    """One real batch: a stray notebook beside the solved one, both.py + both.ipynb, a Mac zip's debris."""
    root = tmp_path_factory.mktemp("pick")
    folder = root / "class"
    alice = put(folder / "alice" / "sdpa", {"Untitled.ipynb": notebook("print(1)")})
    shutil.copy(SOLVED_NOTEBOOK, alice / OWN_NOTEBOOK)
    put(folder, {"both.ipynb": notebook("print(1)"), "both.py": REFERENCE.read_text()})
    put(folder / "mac", {f"__MACOSX/sdpa/._{OWN_NOTEBOOK}": "", f"sdpa/{OWN_NOTEBOOK}": notebook("x = 1")})
    (folder / "mac" / "__MACOSX" / "sdpa" / f"._{OWN_NOTEBOOK}").write_bytes(b"\x00\x05\x16\x07\xff\xfe")
    out, table, report = root / "grades", root / "grades.csv", root / "class.html"
    command = [str(BIN / "sdpa-grade"), "batch", str(folder), "--json-dir", str(out), "--csv", str(table),
               "--report", str(report)]  # fmt: skip
    result = run(command, timeout=900)
    return {"result": result, "out": out, "csv": table, "report": report}


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_batch_grades_the_rules_choice_and_flags_the_student(flagged_batch):
    """Graded right (full marks), flagged naming the candidates in results, summary and dashboard; one row for both."""
    result = flagged_batch["result"]
    assert result.returncode == 0, result.stderr[-3000:]
    with open(flagged_batch["csv"], encoding="utf-8") as handle:
        rows = {row["student"]: row for row in csv.DictReader(handle)}
    assert sorted(rows) == ["alice", "both", "mac"]
    for name, graded, candidates in (
        ("alice", f"sdpa/{OWN_NOTEBOOK}", [f"sdpa/{OWN_NOTEBOOK}", "sdpa/Untitled.ipynb"]),
        ("both", "both.py", ["both.py", "both.ipynb"]),
    ):
        results = json.loads((flagged_batch["out"] / f"{name}.json").read_text())
        assert checks_part(results)[0] == checks_part(results)[1] > 0, (name, results["output"])
        assert results["extra_data"]["graded_file"] == graded
        assert results["extra_data"]["candidates"] == candidates
        assert all(candidate in results["output"] for candidate in candidates[1:])
    mac = json.loads((flagged_batch["out"] / "mac.json").read_text())
    assert "ungradable" not in mac and mac["extra_data"]["graded_file"] == f"sdpa/{OWN_NOTEBOOK}"
    assert "candidates" not in mac["extra_data"]
    review = result.stdout.split("Flagged for review", 1)[1].split("Grading time", 1)[0]
    assert "Untitled.ipynb" in review and "both.ipynb" in review and "mac" not in review
    html = flagged_batch["report"].read_text(encoding="utf-8")
    assert "Untitled.ipynb" in html and "both.ipynb" in html
