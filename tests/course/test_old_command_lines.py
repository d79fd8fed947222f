"""The older command lines, the one place the tests still write them: ``sdpa-grade FILE``, ``--batch DIR``
(``--batch=DIR``), ``--batch DIR --summary-only`` and ``--diff OLD NEW`` are read as the verb they mean
(autograder/cli.verb_form), so each does what its verb does and says what its verb says. Every other test writes the
verbs (``sdpa-grade grade FILE``, ``batch DIR``, ``summary DIR``, ``diff OLD NEW``). cli.py prints no warning for an
older form: it is read silently, and the tests here hold it to exactly its verb's output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autograder.cli import VERBS
from tests.helpers import BIN, FAST_LIMITS, REFERENCE, ROOT, csv_rows, maximum, run


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
