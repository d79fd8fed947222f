"""The one compatibility test of `sdpa-grade`'s older command lines (SPEC's `sdpa-grade SUBMISSION`, `--batch DIR`,
`--summary-only`, `--diff OLD NEW`): each is read as the verb form it means, parses, prints and exits as that form,
and is refused in that verb's name. Every other test uses the verbs (`sdpa-grade grade FILE`, `sdpa-grade batch
DIR`, ...); this file is the only one that spells the older forms."""

from __future__ import annotations

import json

import pytest

from autograder.cli import command, forks_zygote, main, verb_form
from tests.helpers import BIN, REFERENCE, ROOT, run, said


@pytest.mark.parametrize(
    ("options", "reason", "instead"),
    [
        (["REFERENCE", "--csv", "OUT"], "--csv does not apply to grade: it is an option of batch, summary, diff",
         ["--json FILE", "--html FILE"]),
        (["REFERENCE", "--shard", "0/2"], "--shard does not apply to grade: it is an option of batch, summary", []),
        (["REFERENCE", "--json-dir", "OUT"], "--json-dir does not apply to grade: it is an option of batch, summary",
         ["--json FILE"]),
        (["REFERENCE", "--jobs", "4"], "--jobs does not apply to grade: it is an option of batch", []),
        (["REFERENCE", "--similarity"], "--similarity does not apply to grade: it is an option of batch, summary", []),
        (["--batch", "CLASS", "--html", "OUT"], "--html does not apply to batch: it is an option of grade",
         ["--report FILE"]),
        (["--batch", "CLASS", "--json", "OUT"], "--json does not apply to batch: it is an option of grade",
         ["--json-dir DIR"]),
        (["REFERENCE", "--batch", "CLASS"], "unrecognized arguments: REFERENCE", []),
        (["REFERENCE", "--times", "OUT"], "--times does not apply to grade: it is an option of batch",
         ["--submitted-at TIME"]),
        (["--batch", "CLASS", "--submitted-at", "2026-12-01T23:59:00Z"],
         "--submitted-at does not apply to batch: it is an option of grade", ["--times FILE"]),
    ],
)  # fmt: skip
def test_options_that_would_be_ignored_are_refused(tmp_path, options, reason, instead):
    """An option that does not apply is refused (exit 2) before anything is graded or written: the verb's usage, which
    shows what that verb takes instead, then one line naming the option, the verbs it fits and the verb form that the
    older command line is read as."""
    names = {"REFERENCE": str(REFERENCE), "OUT": str(tmp_path / "out"), "CLASS": str(ROOT / "examples" / "class")}
    result = run([str(BIN / "sdpa-grade"), *[names.get(option, option) for option in options]])
    assert result.returncode == 2, result.stderr
    usage, _, last = result.stderr.strip().rpartition("\n")
    verb = "batch" if "--batch" in options else "grade"
    assert usage.startswith(f"usage: sdpa-grade {verb} ") and all(option in usage for option in instead), usage
    assert last.startswith(f"sdpa-grade {verb}: error: ") and names.get(reason[-9:], "") in last, result.stderr
    assert reason.replace("REFERENCE", "") in last and f"is sdpa-grade {verb} " in last, result.stderr
    assert not (tmp_path / "out").exists() and not (ROOT / "examples" / "class-grades").exists()


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (["a.py"], ["grade", "a.py"]),
        (["a.py", "--json", "r.json", "--device", "cpu", "--config", "c.toml"],
         ["grade", "a.py", "--json", "r.json", "--device", "cpu", "--config", "c.toml"]),
        (["--json", "r.json", "a.py"], ["grade", "--json", "r.json", "a.py"]),
        (["--batch", "D", "--jobs", "4", "--csv", "g.csv", "--json-dir", "out", "--force"],
         ["batch", "D", "--jobs", "4", "--csv", "g.csv", "--json-dir", "out", "--force"]),
        (["--jobs", "4", "--batch=D"], ["batch", "D", "--jobs", "4"]),
        (["--batch", "D", "--json-dir", "g", "--summary-only", "--csv", "c.csv"],
         ["summary", "D", "--json-dir", "g", "--csv", "c.csv"]),
        (["--diff", "old", "new", "--csv", "c.csv"], ["diff", "old", "new", "--csv", "c.csv"]),
        (["--batch", "D", "--json-dir", "new", "--diff", "old", "--report", "r.html"],
         ["batch", "D", "--json-dir", "new", "--diff", "old", "--report", "r.html"]),
        (["grade", "a.py"], ["grade", "a.py"]),
        (["batch", "D", "--jobs", "4"], ["batch", "D", "--jobs", "4"]),
        (["summary", "D"], ["summary", "D"]),
        (["diff", "old", "new"], ["diff", "old", "new"]),
        (["--help"], ["--help"]),
        ([], []),
    ],
)  # fmt: skip
def test_the_older_forms_read_as_the_verb_they_mean(old, new):
    """SPEC's and the docs' forms (`FILE`, `--batch DIR`, `--summary-only`, `--diff OLD NEW`) become the verb's
    command line; a verb's own is kept as it is."""
    assert verb_form(old) == new


@pytest.mark.parametrize(
    "old",
    [
        ["examples/class/bob.py", "--json", "r.json", "--device", "cpu", "--config", "c.toml"],
        ["--batch", "submitted", "--jobs", "2", "--csv", "grades.csv", "--json-dir", "grades", "--force"],
        ["--batch", "submitted", "--json-dir", "grades", "--shard", "3/8", "--jobs", "16"],
        ["--batch", "submitted", "--json-dir", "grades", "--summary-only", "--csv", "grades.csv"],
        ["--batch", "submitted", "--json-dir", "grades", "--summary-only", "--similarity"],
        ["--diff", "grades", "grades-v2", "--csv", "changes.csv"],
        ["--batch", "submitted", "--config", "v2.toml", "--json-dir", "grades-v2", "--diff", "grades", "--report",
         "class-v2.html"],
        ["--batch", "submitted", "--csv", "canvas.csv", "--csv-format", "canvas", "--roster", "export.csv"],
    ],
)  # fmt: skip
def test_each_documented_older_form_parses_as_its_verb_form(old):
    """An older form and the verb form it reads as give the same options, option by option."""
    assert vars(command(old)) == vars(command(verb_form(old)))
    assert command(old).verb == verb_form(old)[0]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (["--summary-only"], "use: sdpa-grade summary DIR"),
        (["--json-dir", "grades", "--summary-only", "--csv", "g.csv"], "use: sdpa-grade summary DIR"),
        (["--batch"], "use: sdpa-grade batch DIR"),
        (["--jobs", "2", "--batch", "--json-dir", "g"], "use: sdpa-grade batch DIR"),
    ],
)
def test_an_older_form_that_names_no_folder_is_refused_naming_the_verb(capsys, old, new):
    """`--summary-only` without `--batch DIR`, or `--batch` without its DIR: exit 2, naming the verb's form."""
    code, _, err = said(old, capsys)
    assert code == 2 and new in err.strip().splitlines()[-1], err


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (["NOTHING", "--json", "OUT"], ["grade", "NOTHING", "--json", "OUT"]),
        (["--batch", "CLASS", "--json-dir", "GRADES", "--summary-only"], ["summary", "CLASS", "--json-dir", "GRADES"]),
        (["--diff", "NOWHERE", "CLASS"], ["diff", "NOWHERE", "CLASS"]),
    ],
    ids=["grade", "summary", "diff"],
)
def test_an_older_form_prints_and_exits_as_its_verb_form(tmp_path, old, new):
    """`sdpa-grade FILE`, `--batch DIR --summary-only` and `--diff OLD NEW` print the same and exit the same as the
    verb form they are read as (here: a missing file, a class with no results yet, a folder that is not there)."""
    (tmp_path / "class" / "alice").mkdir(parents=True)
    names = {"NOTHING": tmp_path / "nothing.py", "OUT": tmp_path / "results.json", "CLASS": tmp_path / "class",
             "GRADES": tmp_path / "grades", "NOWHERE": tmp_path / "nowhere"}  # fmt: skip
    done = []
    for argv in (old, new):
        result = run([str(BIN / "sdpa-grade"), *[str(names.get(word, word)) for word in argv]])
        written = names["OUT"].read_text() if names["OUT"].exists() else None
        names["OUT"].unlink(missing_ok=True)
        done.append((result.returncode, result.stdout, result.stderr, written and json.loads(written)["output"]))
    assert done[0] == done[1] and done[0][0] in (1, 2), done


def test_an_older_html_request_keeps_the_early_zygote():
    """`sdpa-grade FILE --html PAGE` is read as grade's: one grading still forks its zygote at the start."""
    assert forks_zygote(["a.py", "--html", "x.html"], {"autograder.cli": None})


def test_an_older_form_forks_the_zygote_only_where_its_verb_form_does():
    """`sdpa-grade FILE` forks its zygote at the start; `--batch`, `--diff` and a seed on the command line do not."""
    fresh = {"autograder.cli": None}
    assert forks_zygote(["attention.py", "--json", "out.json", "--config", "c.toml"], fresh)
    for argv in (["--batch", "class"], ["--bat", "class"], ["--diff", "a", "b"], ["a.py", "--seed", "3"],
                 ["a.py", "--seed=3"]):  # fmt: skip
        assert not forks_zygote(argv, fresh), argv


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--batch", "nowhere"], "sdpa-grade batch: nowhere is not a folder"),
        (["--batch", "nowhere", "--summary-only"], "sdpa-grade summary: nowhere is not a folder"),
    ],
)
def test_an_older_forms_messages_name_its_verb(tmp_path, capsys, monkeypatch, argv, said):
    """A folder that is not one is refused in the name of the verb the older form is read as."""
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    assert capsys.readouterr().err.strip() == said
