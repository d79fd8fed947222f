"""The one compatibility test of `sdpa-grade`'s older command lines (SPEC's `sdpa-grade SUBMISSION`, `--batch DIR`,
`--summary-only`, `--diff OLD NEW`): each is read as the verb form it means, parses, prints and exits as that form,
and is refused in that verb's name. Every other test uses the verbs (`sdpa-grade grade FILE`, `sdpa-grade batch
DIR`, ...); this file is the only one that spells the older forms."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autograder.cli import VERBS, command, forks_zygote, main, verb_form
from tests.helpers import BIN, FAST_LIMITS, REFERENCE, ROOT, csv_rows, maximum, run, said


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


def test_an_older_html_request_keeps_the_early_zygote(tmp_path, monkeypatch):
    """`sdpa-grade FILE --html PAGE` is read as grade's: one grading still forks its zygote at the start."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").touch()
    assert forks_zygote(["a.py", "--html", "x.html"], {"autograder.cli": None})


def test_an_older_form_forks_the_zygote_only_where_its_verb_form_does(tmp_path, monkeypatch):
    """`sdpa-grade FILE` forks its zygote at the start; `--batch`, `--diff` and a seed on the command line do not."""
    fresh = {"autograder.cli": None}
    monkeypatch.chdir(tmp_path)
    (tmp_path / "attention.py").touch()
    (tmp_path / "a.py").touch()
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


# ---- each older form run for real beside its verb form: the same exit, output and files ----


def _both(old: list[str], new: list[str], cwd: Path = ROOT, timeout: float = 120):
    """``sdpa-grade`` run for real with the older form, then with the verb form: the two finished commands."""
    return [run([str(BIN / "sdpa-grade"), *argv], cwd=cwd, timeout=timeout) for argv in (old, new)]


@pytest.mark.parametrize(
    ("old", "new", "says"),
    [
        (["--diff", "nowhere", "."], ["diff", "nowhere", "."], "sdpa-grade diff: nowhere is not a folder"),
        (["--diff", "docs", "docs"], ["diff", "docs", "docs"], "holds no results files"),
        (["--diff", "docs"], ["diff", "docs"], "sdpa-grade diff takes two results folders"),
        (["--batch=nowhere", "--jobs", "1"], ["batch", "nowhere", "--jobs", "1"],
         "sdpa-grade batch: nowhere is not a folder"),
        (["--summary-only", "--batch=nowhere"], ["summary", "nowhere"], "sdpa-grade summary: nowhere is not a folder"),
    ],
)  # fmt: skip
def test_an_older_form_is_refused_as_its_verb_is(old, new, says):
    """A folder that cannot be compared, batched or summarised: the older form exits 2 with its verb's own message,
    the same bytes as the verb form's."""
    older, verb = _both(old, new)
    assert (older.returncode, older.stdout, older.stderr) == (verb.returncode, verb.stdout, verb.stderr)
    assert older.returncode == 2 and says in older.stderr, older.stderr


@pytest.mark.parametrize(
    ("old", "verb", "option", "owners"),
    [
        (["examples/class/bob.py", "--jobs", "2"], "grade", "--jobs", "batch"),
        (["--batch", "examples/class", "--json", "r.json"], "batch", "--json", "grade"),
        (["--diff", "a", "b", "--force"], "diff", "--force", "batch"),
    ],
)
def test_an_option_of_another_verb_in_an_older_form_names_the_verb_form(old, verb, option, owners):
    """Another verb's option in an older form: exit 2 before anything runs, the verb's own refusal, and the verb form
    the older one is read as (so the reader learns the verb)."""
    done = run([str(BIN / "sdpa-grade"), *old], cwd=ROOT)
    last = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert last.startswith(f"sdpa-grade {verb}: error: {option} does not apply to {verb}: it is an option of {owners}")
    assert last.endswith(f"({VERBS[verb].older} is {VERBS[verb].form})"), last


def test_diff_older_form_prints_and_writes_what_diff_does(tmp_path):
    """`--diff OLD NEW --csv` on two results folders: the same lines and the same CSV as `diff OLD NEW --csv`."""
    old, new = tmp_path / "old", tmp_path / "new"
    for folder, bob in ((old, 40.0), (new, 30.0)):
        folder.mkdir()
        for name, score in (("alice", 50.0), ("bob", bob)):
            result = {"score": score, "max_score": maximum(), "output": "", "tests": []}
            (folder / f"{name}.json").write_text(json.dumps(result))
    older, verb = _both(
        ["--diff", str(old), str(new), "--csv", str(tmp_path / "old.csv")],
        ["diff", str(old), str(new), "--csv", str(tmp_path / "verb.csv")],
    )
    assert older.returncode == verb.returncode == 0, older.stderr + verb.stderr
    assert older.stdout == verb.stdout and "1 of 2 change" in older.stdout, older.stdout
    assert csv_rows(tmp_path / "old.csv") == csv_rows(tmp_path / "verb.csv")


def test_summary_only_older_form_prints_and_writes_what_summary_does(graded_class, tmp_path):
    """`--batch DIR --json-dir OUT --summary-only --csv` on a class's results: the same summary and the same CSV as
    `summary DIR --json-dir OUT --csv`, nothing graded."""
    folder, out = graded_class({"score": 20.0, "max_score": maximum(), "output": "", "tests": []})
    older, verb = _both(
        ["--batch", str(folder), "--json-dir", str(out), "--summary-only", "--csv", str(tmp_path / "old.csv")],
        ["summary", str(folder), "--json-dir", str(out), "--csv", str(tmp_path / "verb.csv")],
    )
    assert older.returncode == verb.returncode == 0, older.stderr + verb.stderr
    assert older.stdout == verb.stdout and "Class summary: 2 submissions" in older.stdout, older.stdout
    assert csv_rows(tmp_path / "old.csv") == csv_rows(tmp_path / "verb.csv")


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_batch_older_form_writes_the_results_batch_resumes(tmp_path):
    """`--batch DIR` grades the class as `batch DIR` does: a `batch DIR` over its results after it grades no one
    again (same file, checks, settings and grader) and writes the same CSV."""
    folder, out, config = tmp_path / "class", tmp_path / "grades", tmp_path / "fast.toml"
    folder.mkdir()
    (folder / "alice.py").write_text(REFERENCE.read_text())
    config.write_text(FAST_LIMITS)
    common = ["--json-dir", str(out), "--config", str(config), "--jobs", "1"]
    older, verb = _both(
        ["--batch", str(folder), *common, "--csv", str(tmp_path / "old.csv")],
        ["batch", str(folder), *common, "--csv", str(tmp_path / "verb.csv")],
        timeout=110,
    )
    assert older.returncode == verb.returncode == 0, older.stderr[-2000:] + verb.stderr[-2000:]
    assert "1 to grade" in older.stderr and "1 already graded, 0 to grade" in verb.stderr, older.stderr + verb.stderr
    assert csv_rows(tmp_path / "old.csv") == csv_rows(tmp_path / "verb.csv")


def test_a_file_alone_is_graded_as_grade_grades_it(tmp_path):
    """`sdpa-grade FILE --json OUT` on an empty file: exit 2, the grade verb's message, and the same ungradable
    results file (score 0 of the one maximum) as `sdpa-grade grade FILE --json OUT`."""
    (tmp_path / "attention.py").write_text("")
    older, verb = _both(["attention.py", "--json", "old.json"], ["grade", "attention.py", "--json", "verb.json"],
                        cwd=tmp_path)  # fmt: skip
    assert (older.returncode, older.stdout, older.stderr) == (verb.returncode, verb.stdout, verb.stderr)
    assert older.returncode == 2 and older.stderr.startswith("sdpa-grade grade: nothing to grade"), older.stderr
    old, new = (json.loads((tmp_path / name).read_text()) for name in ("old.json", "verb.json"))
    seen = [[(t["name"], t["score"], t["max_score"], t["output"]) for t in r["tests"]] for r in (old, new)]
    assert seen[0] == seen[1], seen  # when it was graded, and how long each check took, differ from run to run
    assert [(r["score"], r["max_score"], r["output"], r.get("ungradable")) for r in (old, new)] == 2 * [
        (0, maximum(), new["output"], new["ungradable"])
    ]
