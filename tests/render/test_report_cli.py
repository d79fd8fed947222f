"""`sdpa-grade grade --html` and `sdpa-grade batch --report`, run for real,
and their pages rendered in a headless browser."""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest

from autograder.course.class_results import class_results
from autograder.course.roster import page_names
from autograder.render.terminal import summary
from tests.graded import Batch
from tests.helpers import BIN, REFERENCE, a_class, decoded, parsed, run, with_overlay

matplotlib_image = pytest.importorskip(
    "matplotlib.image", reason="the HTML pages draw with matplotlib (the [report] extra)"
)

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium here (Debian's chromium; .ci/run installs it)"
)
# the flags that keep headless chromium off the (closed) network
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--hide-scrollbars"]  # fmt: skip
STUDENTS = {"alice": None, "bob": "mistake_causal_flipped", "carol": "cheat_fused"}


def _students(folder):
    for name, overlay in STUDENTS.items():
        (folder / f"{name}.py").write_text(with_overlay(overlay))


# three students graded with --report: correct, a flipped causal mask, fused attention (the graded fixture: the
# dashboard is class.html, the pages in class-feedback/, beside it)
GRADED = Batch(_students, lambda base: ["--jobs", "2", "--report", str(base / "class.html")], timeout=600)


def _report(graded) -> Path:
    return graded["base"] / "class.html"


def _pages(graded) -> Path:
    return graded["base"] / "class-feedback"


@pytest.mark.slow
def test_report_names_every_student_and_check(graded):
    """The dashboard parses, its plots decode, and every student and every check of the results is on it."""
    assert graded["result"].returncode == 0, graded["result"].stderr[-3000:]
    checker = parsed(_report(graded).read_text())
    assert len(checker.images) == 4
    for src in checker.images:
        decoded(src)
    text = "".join(checker.text)
    checks = {test["name"] for test in json.loads((graded["out"] / "alice.json").read_text())["tests"]}
    assert all(name in text for name in checks)
    assert {f"class-feedback/{page}" for page in page_names(STUDENTS).values()} <= set(checker.links)
    assert "causal_flipped" in text and "carol" in text.split("To review")[1]


@pytest.mark.slow
def test_each_student_page_has_its_pictures(graded):
    """bob's page embeds one attention picture per failing function; alice's none; every page parses."""
    for name in STUDENTS:
        checker = parsed((_pages(graded) / page_names([name])[name]).read_text())
        for src in checker.images:
            decoded(src)
        assert len(checker.images) == {"alice": 0, "bob": 2, "carol": 0}[name]


@pytest.mark.slow
def test_html_for_one_submission(overlay, tmp_path):
    """sdpa-grade grade FILE --html writes the same page for one submission, beside its usual table."""
    submission = overlay("mistake_mask_inverted")
    page = tmp_path / "out" / "feedback.html"
    result = run([str(BIN / "sdpa-grade"), "grade", str(submission), "--html", str(page)])
    assert result.returncode == 0, result.stderr
    checker = parsed(page.read_text())
    assert len(checker.images) >= 1
    assert "polarity is inverted" in "".join(checker.text)


def test_missing_matplotlib_is_a_usage_error_before_grading(tmp_path):
    """Without matplotlib, --html stops at once (exit 2) with the command that installs it."""
    shadow = tmp_path / "shadow" / "matplotlib"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('no matplotlib here')\n")
    env = {**os.environ, "PYTHONPATH": str(shadow.parent)}
    result = run([str(BIN / "sdpa-grade"), "grade", str(REFERENCE), "--html", str(tmp_path / "f.html")], env=env)
    assert result.returncode == 2
    assert "sdpa-assignment[report]" in result.stderr
    assert not (tmp_path / "f.html").exists()


def test_report_needs_a_batch():
    """--report on one submission is a usage error pointing at --html."""
    result = run([str(BIN / "sdpa-grade"), "grade", str(REFERENCE), "--report", "class.html"])
    assert result.returncode == 2 and "--html" in result.stderr


def test_class_summary_lists_flags_and_times_from_fields():
    """The text summary's review list and times come from extra_data.flag, ungradable and execution_time."""
    text = summary(class_results(a_class()))
    review = text.split("Flagged for review", 1)[1]
    assert "carol: integrity" in review and "dave: ungradable" in review and "bob" not in review
    assert "median 3.0 s, slowest 9.5 s" in text


def screenshot(page: Path, out: Path, height: int) -> object:
    """The page as headless chromium draws it, 1200 pixels wide; its pixels as an array (rows, columns, RGBA)."""
    with tempfile.TemporaryDirectory() as profile:
        result = run([CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--screenshot={out}",
                      f"--window-size=1200,{height}", page.as_uri()], timeout=120)  # fmt: skip
    assert out.is_file(), result.stderr[-2000:]
    return matplotlib_image.imread(out)


def near(pixels, colour: str, tolerance: float = 0.05) -> int:
    """How many pixels are within ``tolerance`` of ``colour`` (#rrggbb) in every channel."""
    target = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    close = abs(pixels[..., 0] - target[0]) < tolerance
    for channel in (1, 2):
        close &= abs(pixels[..., channel] - target[channel]) < tolerance
    return int(close.sum())


def without_images(page: Path, out: Path) -> Path:
    out.write_text(page.read_text().replace('src="data:image/png', 'data-removed="'))
    return out


@pytest.mark.slow
@needs_chromium
def test_dashboard_renders_in_a_browser_with_its_plots(graded, tmp_path):
    """In chromium the dashboard is not blank and shows its plots' bars (absent when the images are taken out)."""
    pixels = screenshot(_report(graded), tmp_path / "dashboard.png", 2600)
    rgb = pixels[..., :3]
    assert float(rgb.std()) > 0.05 and float((rgb.mean(axis=2) < 0.9).mean()) > 0.02  # not a blank page
    bars = near(pixels, "#3b6fb6")  # the histograms' and mistakes' bar colour
    assert bars > 3000
    control = screenshot(without_images(_report(graded), tmp_path / "bare.html"), tmp_path / "bare.png", 2600)
    assert near(control, "#3b6fb6") < bars / 20


@pytest.mark.slow
@needs_chromium
def test_feedback_page_renders_in_a_browser_with_its_attention_picture(graded, tmp_path):
    """In chromium bob's page shows the heat map's darkest blue (a weight near 1) and its red outlines."""
    page = _pages(graded) / page_names(["bob"])["bob"]
    pixels = screenshot(page, tmp_path / "bob.png", 1600)
    assert float(pixels[..., :3].std()) > 0.05
    darkest = near(pixels, "#08306b", 0.08)  # matplotlib's Blues at 1.0
    assert darkest > 300
    control = screenshot(without_images(page, tmp_path / "bare.html"), tmp_path / "bare.png", 1600)
    assert near(control, "#08306b", 0.08) < darkest / 20


@pytest.mark.slow
@needs_chromium
def test_student_table_sorts_in_a_browser(graded, tmp_path):
    """Clicking the score column (by a script appended here) orders the students by score, highest first."""
    page = tmp_path / "clicked.html"
    click = "<script>document.querySelector('#student-table th:nth-child(2)').click();</script></body>"
    page.write_text(_report(graded).read_text().replace("</body>", click))
    with tempfile.TemporaryDirectory() as profile:
        dom = run(
            [CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--dump-dom", page.as_uri()], timeout=120
        ).stdout
    order = [name for name in re.findall(r'<tr data-student="([^"]+)"', dom)]
    scores = {name: json.loads((graded["out"] / f"{name}.json").read_text())["score"] for name in STUDENTS}
    assert sorted(order) == sorted(STUDENTS)
    assert [scores[name] for name in order] == sorted(scores.values(), reverse=True), order
