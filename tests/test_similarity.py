"""The similarity pass: copies found by code and by identical wrong answers, scored against the class, for review."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from autograder.config import load_settings
from autograder.course import similarity
from autograder.course.class_results import class_results
from autograder.render.dashboard import dashboard
from autograder.render.similarity import CSV_COLUMNS
from tests.helpers import BIN, REFERENCE, ROOT, run

CORPUS = ROOT / "tests" / "similarity"
LIMITS = load_settings(environ={}).limits


@pytest.fixture(scope="module")
def given() -> set[str]:
    return similarity.given_fingerprints(similarity.given_code(ROOT))


def _corpus() -> tuple[dict[str, Path], dict[str, dict]]:
    roster = {f.stem: f for f in sorted((CORPUS / "class").glob("*.py"))}
    results = {name: json.loads((CORPUS / "results" / f"{name}.json").read_text()) for name in roster}
    return roster, results


def _pass(roster: dict[str, Path], results: dict[str, dict], given: set[str]) -> similarity.Similarity:
    sources, skipped = {}, {}
    for name, path in roster.items():
        sources[name], skipped[name] = similarity.read_source(path, results[name], LIMITS)
    return similarity.similarity(results, sources, given, skipped)


@pytest.mark.timeout(60)
def test_corpus_planted_copies_flagged_and_independent_students_not(given):
    """On the corpus: at least 90% of the planted copies flagged, at most one flagged pair among >= 30 independent
    students, and no other false alarm (a copy with anyone but its source)."""
    roster, results = _corpus()
    found = _pass(roster, results, given)
    independent = [name for name in roster if not name.startswith("copy_of_")]
    copies = [name for name in roster if name.startswith("copy_of_")]
    assert len(independent) >= 30 and len(copies) >= 10
    flagged = {frozenset((p.a, p.b)) for p in found.flagged}
    planted = {frozenset((copy, copy.removeprefix("copy_of_"))) for copy in copies}
    assert len(planted & flagged) >= 0.9 * len(planted), sorted(map(sorted, planted - flagged))
    among_independent = [pair for pair in flagged if pair <= set(independent)]
    assert len(among_independent) <= 1, among_independent
    assert not flagged - planted - set(among_independent), flagged - planted


def _result(answers: dict[str, tuple[str, str]], sha: str = "") -> dict:
    """A result whose checks each passed ("passed") or failed with the given mistake and feedback."""
    tests = [{"name": check, "score": 1.0 if feedback == "passed" else 0.0, "max_score": 1.0, "output": feedback,
              "extra_data": {"outcome": "passed" if feedback == "passed" else "failed", "mistake": mistake}}
             for check, (mistake, feedback) in answers.items()]  # fmt: skip
    return {"score": 0, "max_score": len(tests), "tests": tests, "extra_data": {"provenance": {"sha256": sha}}}


def test_a_rare_identical_wrong_answer_weighs_more_than_a_common_one():
    """Two students sharing a wrong answer nobody else gives weigh more than two sharing the class's common one, who
    weigh more than two sharing the majority's pass; a pass everyone shares weighs nothing; the feedback's numbers
    (each grading's own inputs) do not matter."""
    common = ("divide_by_dk", "differs by up to 2.4 at (0, 1): expected 0.9")
    rare = ("", "the gradient for K: differs by up to 0.31")
    results = {
        "ann": _result({"scale": common, "grad": rare, "shape": ("", "passed")}),
        "ben": _result({"scale": ("divide_by_dk", "differs by up to 7.1 at (3, 2): expected -0.4"),
                        "grad": ("", "the gradient for K: differs by up to 0.77"),
                        "shape": ("", "passed")}),  # fmt: skip
        **{f"s{i}": _result({"scale": common, "grad": ("", "passed"), "shape": ("", "passed")}) for i in range(8)},
        **{f"t{i}": _result({"scale": ("", "passed"), "grad": ("", "passed"), "shape": ("", "passed")})
           for i in range(20)},
    }  # fmt: skip
    found = similarity.similarity(results, {}, set())
    pair = {(p.a, p.b): p for p in found.pairs}
    ann_ben = {g.check: g for g in pair["ann", "ben"].agreements}
    assert set(ann_ben) == {"scale", "grad"}  # "shape": everyone passed, no weight
    assert ann_ben["grad"].shared_by == 2 and ann_ben["scale"].shared_by == 10
    assert ann_ben["grad"].weight > ann_ben["scale"].weight > 0
    assert pair["ann", "ben"].behaviour > pair["s0", "s1"].behaviour > pair["t0", "t1"].behaviour > 0


def test_a_class_of_identical_correct_solutions_flags_no_one(given):
    """Ten students handing in the reference, all passing: the code is the same, but nothing stands out."""
    text = REFERENCE.read_text()
    results = {f"s{i}": _result({"scale": ("", "passed"), "grad": ("", "passed")}) for i in range(10)}
    found = similarity.similarity(results, {name: text for name in results}, given)
    assert {p.code for p in found.pairs} == {1.0}
    assert not found.flagged


def test_normalising_undoes_renaming_reordering_comments_and_layout(given):
    """A copy renamed, reordered, reformatted and with its comments rewritten has every fingerprint of its source;
    the handed-out template's code is nobody's."""
    source = (
        "def scale_scores(scores, d_k):\n    # the scale\n    return scores / math.sqrt(d_k)\n\n\n"
        "def masked_softmax(scores, mask=None):\n    if mask is not None:\n"
        "        scores = scores.masked_fill(~mask, float('-inf'))\n    weights = torch.softmax(scores, dim=-1)\n"
        "    return weights.nan_to_num(0.0)\n"
    )
    disguised = (
        "def masked_softmax(s, mask = None):\n    '''My softmax.'''\n    if mask is not None:\n"
        "        s = s.masked_fill(~mask,\n                          float('-inf'))  # fill\n"
        "    w = torch.softmax(s, dim = -1)\n    return w.nan_to_num(0.0)\n"
        "def scale_scores(x, d_k):\n    return x / math.sqrt(d_k)\n"
    )
    a, b = similarity.code_of(source, given), similarity.code_of(disguised, given)
    assert a.fingerprints and a.fingerprints.keys() == b.fingerprints.keys()
    template = (ROOT / "student_template" / "attention.py").read_text()
    assert similarity.code_of(template, given).fingerprints == {}


@pytest.mark.parametrize(
    "text, why",
    [
        ("def f(x) return 1\n", "SyntaxError"),
        ("x = " + "(" * 500 + "1" + ")" * 500 + "\n", "nest more than"),
        ("x = [" + "1, " * 30_000 + "]\n", "more than 20000 tokens"),
        ("'''never closed\n", "TokenError"),
    ],
)
def test_an_unreadable_file_gives_no_code_evidence_and_says_why(given, text, why):
    """A file that does not parse, nests too deep, or is too long to tokenise is not compared, and says so."""
    code = similarity.code_of(text, given)
    assert code.fingerprints == {} and why in code.skipped


def test_a_huge_or_changed_file_is_not_read_back(tmp_path):
    """A file over the source bound is not read for comparison; nor one that changed since it was graded, nor a
    symbolic link (to a file of the grader's, shown on the dashboard otherwise)."""
    huge = tmp_path / "huge.py"
    huge.write_text("x = 1\n" * ((LIMITS.source_kb << 10) // 6 + 10))
    text, why = similarity.read_source(huge, None, LIMITS)
    assert text is None and why.startswith("not compared: the file huge.py is ") and "KiB of code is graded" in why
    changed = tmp_path / "changed.py"
    changed.write_text("x = 1\n")
    text, why = similarity.read_source(changed, {"extra_data": {"provenance": {"sha256": "0" * 64}}}, LIMITS)
    assert text is None and "changed since it was graded" in why
    secret = tmp_path / "secret.txt"
    secret.write_text("the grader's own file\n")
    folder = tmp_path / "mallory"
    folder.mkdir()
    (folder / "attention.py").symlink_to(secret)
    text, why = similarity.read_source(folder, None, LIMITS)
    assert text is None and "symbolic link" in why


def test_dashboard_section_escapes_the_students_code(given):
    """The section shows a flagged pair's two files side by side, matching lines marked, student code escaped."""
    roster, results = _corpus()
    pick = ["copy_of_student27", "student27", *[n for n in roster if n.startswith("student")][:8]]
    roster = {name: roster[name] for name in pick}
    results = {name: results[name] for name in pick}
    found = _pass(roster, results, given)
    assert [(p.a, p.b) for p in found.flagged] == [("copy_of_student27", "student27")]
    hostile = "</pre><script>alert(1)</script>\x1b[2J"
    found.sources["student27"] = found.sources["student27"] + f"\n# {hostile}\n"
    html = dashboard(class_results(results), {name: f"{name}.html" for name in results}, similar=found)
    assert "Similar submissions (for review)" in html and "not a verdict" in html
    assert '<span class="match">' in html
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "\x1b" not in html


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_summary_only_similarity_writes_the_csv(tmp_path):
    """``--batch DIR --json-dir OUT --summary-only --similarity`` over results already written: one CSV row per pair
    with exactly the issue's columns, the one-line summary, and with --report the dashboard's section."""
    folder, out = tmp_path / "class", tmp_path / "graded"
    names = ["student27", "copy_of_student27", "student22", "copy_of_student22", "student00", "student01"]
    folder.mkdir()
    out.mkdir()
    for name in names:
        shutil.copy(CORPUS / "class" / f"{name}.py", folder / f"{name}.py")
        shutil.copy(CORPUS / "results" / f"{name}.json", out / f"{name}.json")
    report = tmp_path / "class.html"
    done = run([str(BIN / "sdpa-grade"), "--batch", str(folder), "--json-dir", str(out), "--summary-only",
                "--similarity", "--report", str(report)], timeout=100)  # fmt: skip
    assert done.returncode == 0, done.stderr
    with open(out / "similarity.csv", newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == CSV_COLUMNS == ["student_a", "student_b", "code", "behaviour", "flagged", "why"]
    assert len(rows) - 1 == len(names) * (len(names) - 1) // 2
    assert {row[4] for row in rows[1:]} <= {"yes", "no"}
    flagged = {frozenset(row[:2]) for row in rows[1:] if row[4] == "yes"}
    line = next(line for line in done.stdout.splitlines() if line.startswith("similarity:"))
    assert line == f"similarity: {len(rows) - 1} pairs, {len(flagged)} flagged for review (not a deduction)"
    assert frozenset(("student27", "copy_of_student27")) in flagged
    # the dashboard over the same results (once ignored after --summary-only): the pair, side by side, marked
    page = report.read_text()
    assert "Similar submissions (for review)" in page and "copy_of_student27" in page
    assert 'class="side-by-side"' in page and '<span class="match">' in page


def test_identical_code_alone_is_not_flagged_but_with_a_rare_shared_wrong_answer_it_is(given):
    """Two students whose code converged on the same lines, both correct: far above the class on code, not on
    behaviour, so not flagged; the same two sharing a wrong answer nobody else gives: flagged."""
    texts = {f"s{i}": (CORPUS / "class" / f"student{i:02d}.py").read_text() for i in range(20)}
    texts["s1"] = texts["s0"]
    passing = {f"s{i}": _result({"scale": ("", "passed"), "grad": ("", "passed")}) for i in range(20)}
    found = similarity.similarity(passing, texts, given)
    pair = next(p for p in found.pairs if (p.a, p.b) == ("s0", "s1"))
    assert pair.code == 1.0 and pair.code_z >= similarity.CODE_Z and not found.flagged
    wrong = {**passing, "s0": _result({"scale": ("", "passed"), "grad": ("", "the gradient for K: differs by 0.3")})}
    wrong["s1"] = _result({"scale": ("", "passed"), "grad": ("", "the gradient for K: differs by 0.8")})
    found = similarity.similarity(wrong, texts, given)
    assert [(p.a, p.b) for p in found.flagged] == [("s0", "s1")]


def test_a_notebook_is_compared_by_its_code_cells_not_its_test_cells(tmp_path, given):
    """A notebook's code cells are read (its public and hidden test cells left out) and fingerprinted like a .py:
    the source notebook (the reference's solutions in it) shares nearly all its own code with the reference."""
    notebook = tmp_path / "sdpa.ipynb"
    shutil.copy(ROOT / "assignments" / "source" / "sdpa" / "sdpa.ipynb", notebook)
    text, why = similarity.read_source(notebook, None, LIMITS)
    assert why == "" and "def masked_softmax" in text
    assert "def test_" not in text and "Hidden check" not in text
    code = similarity.code_similarity(similarity.code_of(text, given), similarity.code_of(REFERENCE.read_text(), given))
    assert code > 0.8


def test_the_handed_out_code_is_known_without_the_project_folder(tmp_path, given):
    """Installed from a wheel (no student_template/ or notebook beside it), the template is made from the packaged
    reference: the same fingerprints as the committed template's."""
    alone = similarity.given_fingerprints(similarity.given_code(tmp_path))
    template = similarity.given_fingerprints([(ROOT / "student_template" / "attention.py").read_text()])
    assert alone == template and alone <= given
