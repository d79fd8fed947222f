"""A batch folder's odd names: one result file per student, safe CSV cells, links refused, nothing crashes."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil

import pytest

from autograder.course.batch import students
from autograder.course.roster import result_names
from autograder.read.handed_in import read_submission
from autograder.read.submission import Ungradable
from autograder.render.inert import csv_cell, shown
from tests.helpers import BIN, REFERENCE, TEMPLATE_DIR, quiz_points, run

NOT_UTF8 = os.fsdecode(b"caf\xe9")


def test_names_that_look_alike_get_result_files_of_their_own():
    """'a b' and 'a_b', 'José' and 'Josè', very long names: every name its own file, at most 120 characters."""
    names = ["a b", "a_b", "José", "Josè", "x" * 252, "x" * 245, NOT_UTF8, "..", "alice"]
    files = result_names(names)
    assert len(set(files.values())) == len(names)
    assert files["alice"] == "alice.json" and files["a_b"] == "a_b.json"
    assert all(len(file) <= 120 and "/" not in file and not file.startswith(".") for file in files.values())


def test_a_name_made_to_collide_with_a_safe_form_is_kept_apart():
    """A student who names a folder after another's safe form does not share their result file."""
    first = result_names(["a b"])["a b"]
    files = result_names(["a b", first.removesuffix(".json")])
    assert len(set(files.values())) == 2


def test_a_file_beside_a_folder_of_the_same_name_is_not_dropped(tmp_path):
    """x.py beside x/ are two students: x and x.py."""
    (tmp_path / "x").mkdir()
    (tmp_path / "x.py").write_text("pass\n")
    assert set(students(tmp_path)) == {"x", "x.py"}


def test_csv_cells_that_start_a_formula_are_neutralised():
    """A name beginning with = + - @ goes into the CSV as text, not as a formula."""
    assert csv_cell('=HYPERLINK("http://x","y")') == '\'=HYPERLINK("http://x","y")'
    assert [csv_cell(s) for s in ("+1", "-1", "@a", "bob")] == ["'+1", "'-1", "'@a", "bob"]
    assert shown(NOT_UTF8) == "caf\\xe9"


def test_links_out_of_a_submission_are_refused(tmp_path):
    """attention.py as a link to the reference, or a student folder that is a link: ungradable, with the reason."""
    folder = tmp_path / "student"
    folder.mkdir()
    (folder / "attention.py").symlink_to(REFERENCE)
    with pytest.raises(Ungradable, match="symbolic link"):
        read_submission(folder, tmp_path)
    linked = tmp_path / "linked"
    linked.symlink_to(REFERENCE.parent)
    with pytest.raises(Ungradable, match="symbolic link"):
        read_submission(linked, tmp_path)


@pytest.fixture(scope="module")
def odd_batch(tmp_path_factory):
    """One real batch of odd names, each an untouched template except the honest 'alice' (the reference)."""
    root = tmp_path_factory.mktemp("odd")
    folder = root / "class"
    folder.mkdir()
    names = ["a b", "a_b", '=HYPERLINK("x","y")', "x" * 245, NOT_UTF8, "Jos\u00e9", "Jose\u0301"]
    for name in names:
        shutil.copytree(TEMPLATE_DIR, folder / name, ignore=shutil.ignore_patterns("__pycache__"))
    (folder / "alice").mkdir()
    shutil.copy(REFERENCE, folder / "alice" / "attention.py")
    (folder / "linked").symlink_to(REFERENCE.parent)
    (folder / "cheat").mkdir()
    (folder / "cheat" / "attention.py").symlink_to(REFERENCE)
    out, table = root / "grades", root / "grades.csv"
    out.mkdir()  # alice's earlier result was the grader's own failure: a resumed batch grades her again
    failed = {"score": 0, "max_score": 0, "tests": [], "grader_error": "zygote died"}
    (out / "alice.json").write_text(json.dumps(failed))
    command = [
        str(BIN / "sdpa-grade"),
        "batch",
        str(folder),
        "--json-dir",
        str(out),
        "--csv",
        str(table),
        "--report",
        str(root / "class.html"),
    ]
    result = run(command, timeout=600)
    return {
        "result": result,
        "out": out,
        "csv": table,
        "names": [*names, "alice", "linked", "cheat"],
        "report": root / "class.html",
    }


def test_odd_names_are_all_graded_and_reported(odd_batch):
    """Every odd name gets its own result and CSV row; the honest student (a grader error before) gets full marks."""
    assert odd_batch["result"].returncode == 0, odd_batch["result"].stderr[-3000:]
    results = list(odd_batch["out"].glob("*.json"))
    assert len(results) == len(odd_batch["names"])
    with open(odd_batch["csv"], encoding="utf-8") as handle:
        rows = {row["student"]: row for row in csv.DictReader(handle)}
    assert len(rows) == len(odd_batch["names"])
    assert float(rows["alice"]["score"]) == float(rows["alice"]["max_score"]) - quiz_points() > 0  # regraded, not kept
    assert f"{len(odd_batch['names'])} students, 0 already graded" in odd_batch["result"].stderr
    assert '\'=HYPERLINK("x","y")' in rows and "caf\\xe9" in rows
    assert float(rows["a b"]["score"]) < float(rows["a b"]["max_score"])  # an untouched template, not alice's marks


def test_links_in_a_batch_are_refused_with_a_reason(odd_batch):
    """A linked student folder and a linked attention.py are ungradable (0), and say why."""
    for name in ("linked", "cheat"):
        result = json.loads((odd_batch["out"] / f"{name}.json").read_text())
        assert result["score"] == 0 and "symbolic link" in result["ungradable"]


def test_every_result_names_the_sandbox(odd_batch):
    """Each result says which confinement held, and the batch prints it once."""
    result = json.loads((odd_batch["out"] / "alice.json").read_text())
    assert result["extra_data"]["sandbox"].startswith(("full sandbox", "WEAKER SANDBOX"))
    assert "sandbox" in odd_batch["result"].stderr


def test_odd_names_get_one_distinct_page_each_on_the_dashboard(odd_batch):
    """'a b' and 'a_b', 'José' in two spellings, a 245-character name: each student's own page, linked, titled."""
    from urllib.parse import unquote

    pages = odd_batch["report"].parent / "class-feedback"
    html = odd_batch["report"].read_text(encoding="utf-8")
    links = [unquote(link) for link in re.findall(r'<a href="(class-feedback/[^"]+)"', html)]
    written = sorted(page.name for page in pages.glob("*.html"))
    assert len(written) == len(set(links) & {f"class-feedback/{name}" for name in written}) == len(odd_batch["names"])
    for name in ("Jos\u00e9", "Jose\u0301", "a b", "a_b"):
        titled = [page for page in written if f"<title>Feedback: {name}</title>" in (pages / page).read_text()]
        assert len(titled) == 1, (name, titled)
