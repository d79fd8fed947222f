"""What a new instructor or student meets on first use: help that says what is true,
a missing file told in one line, feedback pages named after the student, a dashboard in sentences,
a gated check worded as not awarded yet, and public tests that point at the first failing function."""

from __future__ import annotations

import html
import json
import re

import pytest

from autograder.cli import parser
from tests.helpers import BIN, TEMPLATE_DIR, run, student_folder

pytestmark = pytest.mark.timeout(120)


def help_of(option: str, verb: str = "batch") -> str:
    """The help text of one option (or argument, by its metavar) of a sdpa-grade verb, as argparse prints it."""
    actions = parser().verbs[verb]._actions
    [action] = [a for a in actions if option in a.option_strings or (option == a.metavar and not a.option_strings)]
    return action.help


def test_json_dir_help_names_the_real_default(tmp_path):
    """--json-dir's help gives the folder a batch really writes to: DIR-grades beside DIR."""
    assert "DIR-grades beside DIR" in help_of("--json-dir")
    assert "../grades" not in help_of("--json-dir")


def test_batch_help_says_top_level_files_are_students_too():
    """batch DIR's help names what it grades: every subfolder, and every .py or .ipynb at DIR's top."""
    text = help_of("DIR")
    assert "subfolder" in text and ".py" in text and ".ipynb" in text


def test_a_missing_file_prints_only_its_reason(tmp_path):
    """sdpa-grade on a path that does not exist prints one line that says so, not a table of zeros."""
    out = tmp_path / "results.json"
    result = run([str(BIN / "sdpa-grade"), "grade", str(tmp_path / "nothing.py"), "--json", str(out)], timeout=120)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        f"sdpa-grade grade: nothing to grade: there is no file or folder at {tmp_path / 'nothing.py'}"
    ]
    assert json.loads(out.read_text())["ungradable"]  # the results file is still written, for Gradescope


def test_html_page_of_an_nbgrader_submission_is_titled_with_the_student(tmp_path):
    """--html on submitted/alice/sdpa/sdpa.ipynb names alice (the folder under submitted/, as the batch names her),
    not the notebook."""
    pytest.importorskip("matplotlib", reason="--html draws with matplotlib (the [report] extra)")
    folder = tmp_path / "submitted" / "alice" / "sdpa"
    folder.mkdir(parents=True)
    (folder / "sdpa.ipynb").write_text("not a notebook")  # ungradable: the page is written all the same, fast
    page = tmp_path / "alice.html"
    result = run([str(BIN / "sdpa-grade"), "grade", str(folder / "sdpa.ipynb"), "--html", str(page)], timeout=120)
    assert result.returncode == 2, result.stderr
    assert "<title>Feedback: alice</title>" in page.read_text()


def test_dashboard_names_each_students_mistakes_in_sentences():
    """The students table's named-mistake column reads as the mistake's short sentence, not its identifier."""
    pytest.importorskip("matplotlib", reason="the dashboard draws with matplotlib (the [report] extra)")
    from autograder.course.class_results import class_results
    from autograder.render.dashboard import dashboard
    from autograder.render.text import describe
    from tests.helpers import check_result, result

    wrong = check_result("scale_values", "scale_scores", "values", 0, 2, "differs.", mistake="divide_by_dk")
    page = dashboard(class_results({"bob": result([wrong])}), {"bob": "bob.html"})
    row = re.search(r'<tr data-student="bob">(.*?)</tr>', page, re.S).group(1)
    mistakes = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)[-2]  # the column before the provenance ("graded")
    assert mistakes == html.escape(describe("divide_by_dk"), quote=False)
    assert "divide_by_dk" not in row


def test_public_tests_point_at_the_first_failing_function_not_the_first_stub(tmp_path):
    """With attention_scores right, scale_scores wrong and the rest still stubs, the public tests say to fix
    scale_scores next (the functions' order, the first that fails), not to implement causal_mask."""
    source = (TEMPLATE_DIR / "attention.py").read_text()
    source = source.replace(
        "raise NotImplementedError('attention_scores is not implemented yet')", "return Q @ K.transpose(-2, -1)"
    ).replace("raise NotImplementedError('scale_scores is not implemented yet')", "return scores / d_k")
    folder = student_folder(tmp_path, source)
    result = run([str(BIN / "python"), "-m", "pytest"], cwd=folder, timeout=120)
    assert result.returncode == 1, result.stdout[-2000:]
    [next_line] = [line for line in result.stdout.splitlines() if line.startswith("Next:")]
    assert next_line.startswith("Next: fix scale_scores in attention.py"), next_line
    assert "causal_mask" not in next_line


def gated_on_a_broken_function(tmp_path):
    """MultiHeadAttention wrong, with nothing fused: its integrity check passes, and is scored."""
    from autograder.config import load_settings
    from autograder.plugin import Outcome
    from autograder.scoring import score
    from autograder.status import Status

    outcomes = [
        Outcome("mha_matches_torch", "MultiHeadAttention", "multi-head", Status.FAILED, message="values differ."),
        Outcome("integrity_mha", "MultiHeadAttention", "integrity", Status.PASSED),
        Outcome("timing_cpu", "scaled_dot_product_attention", "timing", Status.FAILED, message="a wrong answer.",
                flag="timed_answer_wrong"),
        Outcome("sdpa_causal", "scaled_dot_product_attention", "causal", Status.FAILED, message="values differ."),
    ]  # fmt: skip
    return {item.outcome.check: item for item in score(outcomes, load_settings(environ={}))}


@pytest.mark.parametrize("check", ["integrity_mha", "timing_cpu"])
def test_a_gated_check_says_not_awarded_yet_in_neutral_words(tmp_path, check):
    """A gated check of a function that fails its own checks is withheld (a field of its own), worded at the edge as
    not awarded until those checks pass: no 'failed', no 'no points', no flag, in every place a person reads it."""
    from autograder.nbgrader_path.cell_feedback import verdict_outputs
    from autograder.render.text import output_text
    from autograder.report import results_json

    item = gated_on_a_broken_function(tmp_path)[check]
    assert (item.score, item.withheld, item.outcome.flag) == (0.0, True, "")
    function = item.outcome.function
    text = output_text(item)
    assert text.startswith("Not awarded yet:") and f"once {function} passes its own correctness checks" in text, text
    for word in ("fail", "no points", "Flagged"):
        assert word not in text
    outputs = verdict_outputs(check, item)  # nbgrader: 0 points without an error's red traceback
    assert [o.output_type for o in outputs] == ["stream", "execute_result"]
    assert outputs[1].data["text/plain"] == "0" and "Not awarded yet:" in outputs[0].text

    from autograder.config import load_settings
    from autograder.grade import Grading

    grading = Grading(tmp_path / "attention.py", load_settings(environ={}))
    grading.scored = [item]
    [test] = results_json(grading)["tests"]
    assert test.get("status") != "failed" and test["extra_data"]["withheld"] is True
    assert test["output"] == text
    if check == "integrity_mha":  # it passed: Gradescope shows it passed, its points not awarded yet
        assert test["status"] == "passed"
    pytest.importorskip("matplotlib", reason="the pages draw with matplotlib (the [report] extra)")
    from autograder.render.html import check_rows

    assert [row["state"] for row in check_rows({"tests": [test]})] == ["withheld"]  # the page: grey, not red
