"""The similarity pass: copies found by code and by identical wrong answers, scored against the class, for review."""

from __future__ import annotations

import ast
import csv
import io
import json
import keyword
import os
import shutil
import tokenize
from pathlib import Path

import pytest
import torch

from autograder.config import load_settings
from autograder.course import similarity
from autograder.course.class_results import class_results
from autograder.read.handed_in import take
from autograder.release.build import reference_source
from autograder.render.dashboard import dashboard
from autograder.render.similarity import CSV_COLUMNS, summary_line
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
        sources[name], skipped[name] = similarity.read_source(take(path, LIMITS), results[name], LIMITS)
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


def test_a_knowledge_check_not_handed_in_is_no_shared_answer():
    """Two of a class of notebooks hand in attention.py: their questions, each 0 as not handed in, are no answers they
    share (honest students, never flagged for the file they chose); the notebooks' wrong answers still are."""
    from autograder.checks import quiz

    def result(questions: list[dict]) -> dict:
        return {"score": 0.0, "max_score": len(questions), "output": "", "tests": questions}

    wrong = [{"cell_type": "code", "source": f"{q.name} = {q.example}", "metadata": {}} for q in quiz.QUESTIONS]
    results = {
        "ann": result(quiz.results([], "visible", missing=quiz.IN_A_PY)),
        "ben": result(quiz.results([], "visible", missing=quiz.IN_A_PY)),
        **{f"s{i}": result(quiz.results(wrong, "visible")) for i in range(8)},
    }
    assert similarity.answers(results["ann"]) == {}
    assert len(similarity.answers(results["s0"])) == len(quiz.QUESTIONS)
    pairs = {(p.a, p.b): p.behaviour for p in similarity.similarity(results, {}, set()).pairs}
    assert pairs.get(("ann", "ben"), 0.0) == 0.0


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
        ("x = [" + "1, " * 30_000 + "]\n", "more than 20000 tokens"),
        ("'''never closed\n", "TokenError"),
    ],
)
def test_an_unreadable_file_gives_no_code_evidence_and_says_why(given, text, why):
    """A file that does not parse, or is too long to tokenise, is not compared, and says so."""
    code = similarity.code_of(text, given)
    assert code.fingerprints == {} and why in code.skipped


def test_a_huge_or_changed_file_is_not_read_back(tmp_path):
    """A file over the source bound is not read for comparison; nor one that changed since it was graded, nor a
    symbolic link (to a file of the grader's, shown on the dashboard otherwise), nor a named pipe (a reader would wait
    on it for ever): the gate (handed_in.take) refuses each, and the similarity pass reads only its record."""
    huge = tmp_path / "huge.py"
    huge.write_text("x = 1\n" * ((LIMITS.source_kb << 10) // 6 + 10))
    text, why = similarity.read_source(take(huge, LIMITS), None, LIMITS)
    assert text is None and why.startswith("not compared: the file huge.py is ") and "KiB of code is graded" in why
    changed = tmp_path / "changed.py"
    changed.write_text("x = 1\n")
    graded = {"extra_data": {"provenance": {"sha256": "0" * 64}}}
    text, why = similarity.read_source(take(changed, LIMITS), graded, LIMITS)
    assert text is None and "changed since it was graded" in why
    secret = tmp_path / "secret.txt"
    secret.write_text("the grader's own file\n")
    folder = tmp_path / "mallory"
    folder.mkdir()
    (folder / "attention.py").symlink_to(secret)
    text, why = similarity.read_source(take(folder, LIMITS), None, LIMITS)
    assert text is None and "symbolic link" in why
    fifo = tmp_path / "eve"
    fifo.mkdir()
    os.mkfifo(fifo / "attention.py")
    text, why = similarity.read_source(take(fifo, LIMITS), None, LIMITS)
    assert (
        text is None
        and why == "not compared: the file attention.py is not a regular file (a named pipe); submit the file itself"
    )


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
def test_summary_with_similarity_writes_the_csv(tmp_path):
    """``summary DIR --json-dir OUT --similarity`` over results already written: one CSV row per pair
    with exactly the issue's columns, the one-line summary, and with --report the dashboard's section."""
    folder, out = tmp_path / "class", tmp_path / "graded"
    names = ["student27", "copy_of_student27", "student22", "copy_of_student22", "student00", "student01"]
    folder.mkdir()
    out.mkdir()
    for name in names:
        shutil.copy(CORPUS / "class" / f"{name}.py", folder / f"{name}.py")
        shutil.copy(CORPUS / "results" / f"{name}.json", out / f"{name}.json")
    report = tmp_path / "class.html"
    done = run([str(BIN / "sdpa-grade"), "summary", str(folder), "--json-dir", str(out),
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
    # the dashboard over the same results (once ignored by summary): the pair, side by side, marked
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
    text, why = similarity.read_source(take(notebook, LIMITS), None, LIMITS)
    assert why == "" and "def masked_softmax" in text
    assert "def test_" not in text and "Hidden check" not in text
    handed_out = reference_source(ROOT)  # the reference's functions the notebook holds: its parts turned on
    code = similarity.code_similarity(similarity.code_of(text, given), similarity.code_of(handed_out, given))
    assert code > 0.8


def test_the_handed_out_code_is_known_without_the_project_folder(tmp_path, given):
    """Installed from a wheel (no student_template/ or notebook beside it), the template is made from the packaged
    reference: the same fingerprints as the committed template's."""
    alone = similarity.given_fingerprints(similarity.given_code(tmp_path))
    template = similarity.given_fingerprints([(ROOT / "student_template" / "attention.py").read_text()])
    assert alone == template and alone <= given


def _renamed(text: str, rename) -> str:
    """``text`` with each name token that ``rename`` changes rewritten (each line from its end)."""
    lines = io.StringIO(text).readlines()
    tokens = tokenize.generate_tokens(io.StringIO(text).readline)
    names = [t for t in tokens if t.type == tokenize.NAME and not keyword.iskeyword(t.string)]
    for token in reversed([t for t in names if rename(t.string) != t.string]):
        (row, col), (_, end) = token.start, token.end
        lines[row - 1] = lines[row - 1][:col] + rename(token.string) + lines[row - 1][end:]
    return "".join(lines)


def _fullwidth(name: str) -> str:
    """The name in fullwidth letters (U+FF21...), digits and underscores kept: NFKC folds it back."""
    return "".join(chr(ord(c) - ord("A") + 0xFF21) if "A" <= c <= "Z" else
                   chr(ord(c) - ord("a") + 0xFF41) if "a" <= c <= "z" else c for c in name)  # fmt: skip


def _same(a: tuple[torch.Tensor, ...], b: tuple[torch.Tensor, ...]) -> bool:
    return len(a) == len(b) and all(torch.equal(x, y) for x, y in zip(a, b))


def _attention(text: str, name: str = "scaled_dot_product_attention") -> tuple[torch.Tensor, ...]:
    """What the file's function ``name`` (as Python folds it) returns on fixed inputs."""
    namespace: dict = {"__name__": "copy"}
    exec(compile(text, "copy.py", "exec"), namespace)
    Q, K, V = torch.randn(3, 2, 5, 4, generator=torch.Generator().manual_seed(0)).unbind(0)
    return namespace[name](Q, K, V, None, True)  # causal; by position, since the copy renames its parameters


def _variables(text: str) -> set[str]:
    """The names the file assigns to that are none of its parameters (renamed, they change no call)."""
    tree = ast.parse(text)
    stored = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    return stored - {n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)}


@pytest.mark.parametrize("disguise", ["fullwidth", "middle dot"])
def test_names_python_reads_as_the_same_are_the_same_to_the_comparison(given, disguise):
    """A copy with every identifier in fullwidth letters (Python folds names by NFKC), or with a middle dot in each
    variable's name (one name to Python, three tokens to ``tokenize``), runs the same and scores as the plain copy."""
    source = (CORPUS / "class" / "student27.py").read_text()
    variables = _variables(source)

    def middle_dot(name: str) -> str:
        return f"{name[0]}\u00b7{name[1:]}" if name in variables else name

    copy = _renamed(source, _fullwidth if disguise == "fullwidth" else middle_dot)
    assert copy != source
    assert _same(_attention(copy), _attention(source))
    plain = similarity.code_similarity(similarity.code_of(source, given), similarity.code_of(source, given))
    assert plain == 1.0
    assert similarity.code_similarity(similarity.code_of(source, given), similarity.code_of(copy, given)) == plain


DEEP = "_unused = " + "(" * 150 + "0" + ")" * 150  # Python takes 200 nested brackets


@pytest.mark.parametrize("where", ["top level", "in a function"])
def test_one_unused_line_nested_deep_does_not_set_a_copy_aside(given, where):
    """The planted copy of student27 with one unused line of 150 nested brackets added (Python runs it) is still
    compared, the brackets past 60 set aside, and still flagged with its source."""
    roster, results = _corpus()
    pick = ["copy_of_student27", "student27", *[n for n in roster if n.startswith("student")][:8]]
    sources = {name: roster[name].read_text() for name in pick}
    lines = sources["copy_of_student27"].splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith("def ")) + (where == "in a function")
    lines.insert(at, "    " * (where == "in a function") + DEEP + "\n")
    sources["copy_of_student27"] = "".join(lines)
    assert _same(_attention(sources["copy_of_student27"]), _attention(sources["student27"]))
    found = similarity.similarity({name: results[name] for name in pick}, sources, given)
    assert [(p.a, p.b) for p in found.flagged] == [("copy_of_student27", "student27")]
    assert found.flagged[0].code > 0.9 and not found.flagged[0].skipped


def test_a_line_too_deep_for_pythons_own_parser_falls_back_to_the_tokens(given):
    """A line nested past what ``ast`` builds without brackets (3,000 unary minuses: a RecursionError in the parser)
    leaves the file compared by its tokens alone, linear in the file: the copy still stands out against its source."""
    source = (CORPUS / "class" / "student27.py").read_text()
    copy = source + "_unused = " + "-" * 3000 + "0\n"
    with pytest.raises((RecursionError, MemoryError)):
        ast.parse(copy)
    code = similarity.code_of(copy, given)
    assert code.skipped == ""
    assert similarity.code_similarity(similarity.code_of(source, given), code) > 0.8


def test_a_file_not_compared_is_named_in_the_summary_line_and_on_the_dashboard(given):
    """Each file the pass could not compare is named, with why, in the one-line summary and on the dashboard's
    section, not only in the CSV's rows."""
    roster, results = _corpus()
    pick = ["copy_of_student27", "student27", *[n for n in roster if n.startswith("student")][:8]]
    roster = {name: roster[name] for name in pick}
    results = {name: results[name] for name in pick}
    sources, skipped = {}, {}
    for name, path in roster.items():
        sources[name], skipped[name] = similarity.read_source(take(path, LIMITS), results[name], LIMITS)
    sources["student00"] = "def f(x) return 1\n"
    sources["student01"], skipped["student01"] = None, "not compared: the file changed since it was graded"
    found = similarity.similarity(results, sources, given, skipped)
    assert list(found.not_compared) == ["student00", "student01"]
    assert found.not_compared["student01"] == "not compared: the file changed since it was graded"
    line = summary_line(found)
    assert line.startswith(f"similarity: 45 pairs, {len(found.flagged)} flagged for review (not a deduction); ")
    assert "student00's code not compared: SyntaxError: " in line
    assert line.endswith("; student01's code not compared: the file changed since it was graded")
    html = dashboard(class_results(results), {name: f"{name}.html" for name in results}, similar=found)
    assert "student00&#39;s code not compared: SyntaxError: " in html
    assert "student01&#39;s code not compared: the file changed since it was graded" in html
