"""The HTML pages (render/html.py, render/dashboard.py): they parse, their images are embedded and decode,
every student and every check appears, and the statistics come from the results' fields, not their wording."""

from __future__ import annotations

import copy
import re

import pytest

from autograder.course.class_results import class_results
from autograder.course.roster import page_names
from autograder.render.dashboard import dashboard, write_report
from autograder.render.html import feedback_text, student_page
from tests.helpers import a_class, decoded, maximum, parsed

matplotlib_image = pytest.importorskip(
    "matplotlib.image", reason="the HTML pages draw with matplotlib (the [report] extra)"
)


def test_student_page_parses_and_embeds_the_attention_picture():
    """A failed check with a picture shows it as an embedded image; the grid's text is left out of the page."""
    page = student_page("bob <b>", a_class()["bob <b>"])
    checker = parsed(page)
    assert len(checker.images) == 1
    decoded(checker.images[0])
    text = "".join(checker.text)
    assert "bob <b>" in text and "<b>" not in page.split("<body>")[1].replace("<b>0</b>", "")  # escaped
    assert "causal triangle is flipped" in text
    assert "Legend" not in text and "█" not in text  # the block grid is for text outputs; the page has the image
    checks = {a["data-check"] for a in checker.attributes if "data-check" in a}
    assert checks == {"causal_mask: causal_square", "sdpa: integrity_sdpa"}


def test_feedback_text_leaves_out_only_the_grid():
    """The page's wording is the feedback as written, without the block grid made from the same picture."""
    bob = a_class()["bob <b>"]["tests"][0]
    assert feedback_text(bob).startswith("causal_mask(5): 10 of 25 entries differ")
    assert "│" not in feedback_text(bob)
    assert feedback_text({"output": "plain"}) == "plain"


def test_dashboard_parses_embeds_its_plots_and_names_everyone(tmp_path):
    """One self-contained page: four plots that decode, every student linked to a page that exists,
    every check listed."""
    results = a_class()
    report = tmp_path / "class.html"
    folder = write_report(report, class_results(results))
    checker = parsed(report.read_text())
    assert len(checker.images) == 4  # scores, pass rates, mistakes, times
    for src in checker.images:
        decoded(src)
    students = {a["data-student"] for a in checker.attributes if "data-student" in a}
    assert students == set(results)
    pages = page_names(list(results))
    for name in results:
        page = folder / pages[name]
        assert page.is_file() and f"{folder.name}/{pages[name]}" in checker.links
        parsed(page.read_text())
    text = "".join(checker.text)
    for check in ("causal_mask: causal_square", "sdpa: integrity_sdpa"):
        assert check in text
    assert "the causal triangle is flipped" in text


def test_students_whose_names_look_alike_get_a_page_each(tmp_path):
    """ "a b" and "a_b", "José" in two Unicode spellings and a 240-character name: one distinct, existing page each,
    the one the dashboard links, titled with that student's name."""
    template = a_class()["alice"]
    names = ["a b", "a_b", "Jos\u00e9", "Jose\u0301", "x" * 240]
    results = {name: copy.deepcopy(template) for name in names}
    folder = write_report(tmp_path / "class.html", class_results(results))
    pages = page_names(names)
    assert len(set(pages.values())) == len(names) == len(list(folder.iterdir()))
    checker = parsed((tmp_path / "class.html").read_text())
    for name in names:
        assert len(pages[name].encode()) < 255 and f"{folder.name}/{pages[name]}" in checker.links
        assert f"<title>Feedback: {name}</title>" in (folder / pages[name]).read_text()


def test_sorting_is_inline():
    """The student table sorts by a script in the page itself, on every column."""
    page = dashboard(class_results(a_class()), {name: f"{name}.html" for name in a_class()})
    assert "<script>" in page and "addEventListener" in page
    assert len(re.findall(r'<th data-sort="(?:text|number)"', page)) >= 4


def test_statistics_come_from_fields_not_wording():
    """Rewording every feedback changes no statistic; a mistake or flag is counted only from its field."""
    results = a_class()
    reworded = copy.deepcopy(results)
    for each in reworded.values():
        for t in each["tests"]:
            t["output"] = "Likely cause: the mask's polarity is inverted. integrity fused attention"
    before, after = class_results(results), class_results(reworded)
    assert before.mistakes == after.mistakes == {"causal_flipped": 1}
    assert [(f.student, f.kind) for f in before.flags] == [(f.student, f.kind) for f in after.flags]
    assert [(f.student, f.kind) for f in before.flags] == [("carol", "integrity"), ("dave", "ungradable")]
    assert before.passed == after.passed
    assert [s.seconds for s in before.students] == [3.0, 9.5, 3.0, 0.5]


def test_integrity_check_that_could_not_run_is_no_flag():
    """bob's integrity check failed only because his function fails its other checks: nothing to review there."""
    assert "bob <b>" not in {f.student for f in class_results(a_class()).flags}


def test_render_draws_from_results_only():
    """The edge imports neither the sandbox, the proxy, nor the pipeline: it draws from results' fields alone."""
    from tests.helpers import ROOT, ours

    for path in sorted((ROOT / "autograder" / "render").glob("*.py")):
        reaching = {name for name in ours(path)
                    if name.startswith(("autograder.sandbox", "autograder.checks.student", "autograder.checks.pictures",
                                        "autograder.grade", "autograder.plugin",
                                        "autograder.nbgrader_path"))}  # fmt: skip
        assert not reaching, f"render/{path.name} imports {sorted(reaching)}"


def test_image_labels_never_round_a_leak_to_zero():
    """A weight of 0.003 on a masked key reads '<.01', not '.00'; exactly 0 reads '0'."""
    from autograder.render.images import _label

    assert [_label(w) for w in (0.0, 0.003, 0.5, 1.0)] == ["0", "<.01", ".50", "1.0"]


@pytest.mark.parametrize(
    "results",
    [
        {},
        {
            "x": {
                "score": 0,
                "max_score": 0,
                "execution_time": 0,
                "output": "failed",
                "tests": [],
                "grader_error": "Traceback\nboom",
            }
        },
    ],
    ids=["empty", "grader-failure"],
)
def test_dashboard_of_an_empty_or_broken_class_still_parses(results, tmp_path):
    """No students, or only a grader failure: the pages are still written, parse, and say so."""
    write_report(tmp_path / "class.html", class_results(results))
    checker = parsed((tmp_path / "class.html").read_text())
    for src in checker.images:
        decoded(src)
    text = "".join(checker.text)
    assert "No check was scored" in text
    assert ("grader error" in text) == bool(results)


def test_markup_in_a_name_or_a_message_is_shown_not_run(tmp_path):
    """A student named with a script tag, and feedback holding markup, appear as text on both pages (autoescape)."""
    name = '<script>alert("x")</script>'
    hostile = copy.deepcopy(a_class()["carol"])
    hostile["tests"][1]["output"] = '<img src=x onerror="alert(1)"> & more'
    folder = write_report(tmp_path / "class.html", class_results({name: hostile}))
    for page in (tmp_path / "class.html", folder / page_names([name])[name]):
        checker = parsed(page.read_text())
        assert not any("onerror" in attrs for attrs in checker.attributes)
        assert len(re.findall(r"<script>", page.read_text())) == (1 if page.name == "class.html" else 0)  # the sorting
        assert name in "".join(checker.text) and '<img src=x onerror="alert(1)"> & more' in "".join(checker.text)


def test_a_students_name_cannot_start_a_line_of_the_class_summary():
    """A name holding a newline, CR or escape is shown on its one line, as everywhere else (render/inert.shown), in the
    flagged list and in the entries skipped."""
    from autograder.render.terminal import summary

    full = f"{maximum():g}/{maximum():g}"  # a forged line claiming full marks
    name = f"nl\nforged: {full}\r\x1b[2K"
    result = {"score": 0, "max_score": 0, "tests": [], "ungradable": "nothing to grade"}
    text = summary(class_results({name: result}), {"odd\nname.txt": "neither a folder, a .py file nor a notebook"})
    assert f"   nl\\x0aforged: {full}\\x0d\\x1b[2K: ungradable" in text.splitlines()
    assert "   odd\\x0aname.txt: neither a folder, a .py file nor a notebook" in text.splitlines()
    assert not any(line.startswith("forged") for line in text.splitlines())
