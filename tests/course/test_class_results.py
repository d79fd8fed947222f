"""The class's results (class_results.py) from a hand-made class: every number the summary, the CSV and the
dashboard show, counted once, for graded, ungradable, grader-error and missing students."""

from __future__ import annotations

import csv
import re
from collections import Counter

import pytest

from autograder.course.class_results import class_results
from autograder.course.grades_csv import write_csv
from autograder.course.roster import page_names, result_names
from autograder.render.dashboard import write_report
from autograder.render.terminal import summary
from autograder.render.text import describe
from tests.helpers import check_result, result

pytest.importorskip("matplotlib", reason="the dashboard draws with matplotlib (the [report] extra)")

SQUARE, INTEGRITY, CUDA = "causal_mask: causal_square", "scaled_dot_product_attention: integrity_sdpa", "timing_cuda"


def a_class() -> dict[str, dict | None]:
    """ann and ben graded, cat ungradable, dan a grader error part-way, eve missing from a merge; 'a b' graded."""
    return {
        "ann": result([
            check_result("causal_square", "causal_mask", "causal", 0, 1, "flipped", "causal_flipped", seconds=0.5),
            check_result("integrity_sdpa", "scaled_dot_product_attention", "integrity", 2, 2, seconds=0.25),
            # a check not run (no GPU) and worth 0 here, with a named mistake all the same
            check_result("timing_cuda", "scaled_dot_product_attention", "timing", 0, 0, "not run", "mask_inverted"),
        ], seconds=2.0),
        "ben": result([
            check_result("causal_square", "causal_mask", "causal", 1, 1, seconds=1.5),
            check_result(
                "integrity_sdpa", "scaled_dot_product_attention", "integrity", 0, 2, "fused", flag="fused_source"
            ),
        ], seconds=6.0),
        "cat": result([], seconds=0.5, ungradable="attention.py is empty"),
        "dan": result([check_result("causal_square", "causal_mask", "causal", 0, 1, "flipped", "causal_flipped")],
                      seconds=1.0,
                      grader_error="Traceback (most recent call last):\n  ...\nRuntimeError: zygote died\n"),
        "eve": None,
        "a b": result([check_result("causal_square", "causal_mask", "causal", 1, 1)], seconds=3.0),
    }  # fmt: skip


def test_each_student_has_their_status_numbers_and_file_names():
    """Status, score, seconds, sorted mistakes, and the roster's result and page file names, per student."""
    stats = class_results(a_class())
    rows = [(s.name, s.status, s.score, s.max_score, s.seconds, s.mistakes) for s in stats.students]
    assert rows == [
        ("ann", "graded", 2.0, 3.0, 2.0, ["causal_flipped", "mask_inverted"]),
        ("ben", "graded", 1.0, 3.0, 6.0, []),
        ("cat", "ungradable", 0.0, 0.0, 0.5, []),
        ("dan", "grader-error", 0.0, 1.0, 1.0, ["causal_flipped"]),
        ("eve", "missing", 0.0, 0.0, 0.0, []),
        ("a b", "graded", 1.0, 1.0, 3.0, []),
    ]
    names = list(a_class())
    assert [s.file for s in stats.students] == [result_names(names)[n] for n in names]
    assert [s.page for s in stats.students] == [page_names(names)[n] for n in names]
    assert stats.students[5].page != "a b.html" and stats.students[0].page == "ann.html"
    assert [s.name for s in stats.present] == ["ann", "ben", "cat", "dan", "a b"]


def test_the_class_counts_every_check_and_mistake_once():
    """Passes and submissions scored per check (worth more than 0), mistakes per submission in any check, times."""
    stats = class_results(a_class())
    assert stats.seen == {SQUARE: 4, INTEGRITY: 2}
    assert stats.passed == {SQUARE: 2, INTEGRITY: 1}
    assert list(stats.seen) == [SQUARE, INTEGRITY]
    assert stats.mistakes == Counter({"causal_flipped": 2, "mask_inverted": 1})
    assert stats.checks == [SQUARE, INTEGRITY, f"scaled_dot_product_attention: {CUDA}"]
    assert stats.check_seconds == {SQUARE: [0.5, 1.5, 0.01, 0.01], INTEGRITY: [0.25, 0.01],
                                   f"scaled_dot_product_attention: {CUDA}": [0.01]}  # fmt: skip


def test_flags_name_the_student_the_kind_and_the_check():
    """A grader error (its last line), ungradable (its reason), an integrity flag (its check and feedback), in order."""
    flags = [(f.student, f.kind, f.check, f.detail) for f in class_results(a_class()).flags]
    assert flags == [
        ("ben", "fused_source", "integrity_sdpa", f"{INTEGRITY}: fused"),
        ("cat", "ungradable", None, "attention.py is empty"),
        ("dan", "grader error", None, "RuntimeError: zygote died"),
    ]


def test_the_summary_writes_those_numbers():
    """The text summary: submissions with a result, each scored check, mistakes most frequent first, review, times."""
    text = summary(class_results(a_class()))
    assert text.splitlines() == [
        "Class summary: 5 submissions",
        "",
        f"{'check':<62} passed",
        f"{SQUARE:<62} 2/4",
        f"{INTEGRITY:<62} 1/2",
        "",
        "Named mistakes (submissions showing each):",
        "   2  the causal triangle is flipped: query i may see keys j <= i, not j >= i",
        "   1  the mask's polarity is inverted: True means 'may attend'",
        "",
        "Flagged for review (integrity flags, ungradable, grader errors; see each student's feedback):",
        "   ben: integrity_sdpa: the source reaches for PyTorch's fused attention",
        "   cat: ungradable",
        "   dan: grader_error",
        "",
        "Grading time per submission: median 2.0 s, slowest 6.0 s",
    ]


def test_the_csv_writes_each_student_and_status(tmp_path):
    """One row per student in the roster's order, as stored; a missing student's row says missing, a grader error's
    holds no score (the grader failed: no grade, never a 0)."""
    path = tmp_path / "grades.csv"
    write_csv(path, class_results(a_class()))
    assert [row[:4] for row in csv.reader(path.open(encoding="utf-8"))] == [
        ["student", "score", "max_score", "status"],
        ["ann", "2", "3", "graded"],
        ["ben", "1", "3", "graded"],
        ["cat", "0", "0", "ungradable"],
        ["dan", "", "", "grader-error"],  # no grade: no score and no maximum in any export
        ["eve", "", "", "missing"],
        ["a b", "1", "1", "graded"],
    ]


def test_the_summary_and_the_dashboard_count_the_same(tmp_path):
    """A mistake shown in a check worth 0 points counts in the summary as on the dashboard (they once differed)."""
    stats = class_results({name: r for name, r in a_class().items() if r is not None})
    write_report(tmp_path / "class.html", stats)
    page = (tmp_path / "class.html").read_text()
    on_the_dashboard = dict(re.findall(r'<tr data-mistake="([^"]+)"><td class="number">(\d+)</td>', page))
    in_the_summary = re.findall(
        r"^ +(\d+)  (.*)$", summary(stats).split("Named mistakes")[1].split("Flagged")[0], re.MULTILINE
    )
    assert on_the_dashboard == {"causal_flipped": "2", "mask_inverted": "1"}
    assert in_the_summary == [("2", describe("causal_flipped")), ("1", describe("mask_inverted"))]
