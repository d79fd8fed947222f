"""autograder/plugin.py: what a check declares, and the collection errors that stop a grading before anything runs."""

from __future__ import annotations

import contextlib
import inspect
import io
import itertools
import time
from pathlib import Path

import pytest

from autograder.assignment.catalogue import catalogue
from autograder.assignment.composition import functions
from autograder.checks.mistakes import SENTENCES
from autograder.checks.student import FUNCTIONS, RETURNS
from autograder.config import load_settings
from autograder.plugin import GradingPlugin
from reference import attention as ref

FACTS = 'function="attention_scores", category="shape", points=2, exercises=("mask",), picture=None'
_names = itertools.count()


def collect(
    tmp_path: Path, source: str, ini: str = "[pytest]\npython_files = check_*.py\n", **runners
) -> tuple[int, str, GradingPlugin]:
    """Run one hidden-check file (a real pytest run, with the grading plugin): its exit code, output and plugin.
    ``runners``: the plugin's ``connect`` and ``connect_reference``, where the checks use them."""
    folder = tmp_path / "checks"
    folder.mkdir()
    (folder / "pytest.ini").write_text(ini)
    # a fresh module name per file: pytest imports each check file as a top-level module (named as the checks are)
    (folder / f"check_{next(_names)}.py").write_text(source)
    plugin = GradingPlugin(runners.pop("connect", lambda: None), load_settings(None), 0, "cpu", **runners)
    output = io.StringIO()
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        code = pytest.main(
            [str(folder), "-c", str(folder / "pytest.ini"), "--rootdir", str(folder), "-q", "-p", "no:cacheprovider"],
            plugins=[plugin],
        )
    return code, output.getvalue(), plugin


def check(marker: str, name: str = "scores_shape", body: str = "pass") -> str:
    return f"import pytest\n\n\n@pytest.mark.check({marker})\ndef test_{name}():\n    {body}\n"


def test_declared_facts_travel_into_the_outcome(tmp_path):
    """A check that declares its facts runs; its outcome carries its function, category, inputs exercised, and its
    failure's message and cause as separate fields."""
    failing = "from autograder.checks.expect import fail\n" + check(FACTS, body='fail("differs", "mask_inverted")')
    code, output, plugin = collect(tmp_path, failing)
    assert code == pytest.ExitCode.TESTS_FAILED, output
    outcome = plugin.outcomes["scores_shape"]
    assert (outcome.function, outcome.category, outcome.exercises, outcome.status) == (
        "attention_scores", "shape", ("mask",), "failed")  # fmt: skip
    assert (outcome.message, outcome.mistake) == ("differs.", "mask_inverted")
    assert outcome.cause == SENTENCES["mask_inverted"]


@pytest.mark.parametrize(
    ("marker", "said"),
    [
        (
            'function="attention_scores", category="shape", points=2, exercises=()',
            "lacks picture=: every check declares function, category, points, exercises, picture",
        ),
        ('function="attention_scores", category="shape", points=2', "lacks exercises=, picture="),
        ('function="attention_scores", category="shape", exercises=(), picture=None', "lacks points="),
        (FACTS + ", weight=3", "has unknown weight="),
        (FACTS.replace("points=2", "points=-1"), "points=-1: a non-negative number"),
        (FACTS.replace("points=2", 'points="2"'), "points='2': a non-negative number"),
        (FACTS.replace("attention_scores", "attention_score"), "function='attention_score' is not one the reference"),
        (FACTS.replace('"shape"', '"shapes"'), "unknown category 'shapes'"),
        (FACTS.replace('("mask",)', '("masks",)'), "exercises=('masks',): a tuple of 'mask', 'fully-masked'"),
        (FACTS.replace("picture=None", 'picture="tiny"'), "picture='tiny': None or one of the tiny examples"),
    ],
    ids=[
        "no picture",
        "no exercises or picture",
        "no points",
        "unknown fact",
        "negative points",
        "points not a number",
        "unknown function",
        "unknown category",
        "unknown input",
        "unknown example",
    ],
)
def test_a_check_lacking_a_fact_fails_collection(tmp_path, marker, said):
    """A marker that lacks a fact, or declares one unknown, stops the run before any check: pytest's usage error."""
    code, output, plugin = collect(tmp_path, check(marker))
    assert code == pytest.ExitCode.USAGE_ERROR, output
    assert any(f"::test_scores_shape: {form}{said}" in output for form in ("@pytest.mark.check ", "")), output
    assert plugin.outcomes == {}


def test_a_check_without_its_marker_fails_collection(tmp_path):
    """A test function without @pytest.mark.check is a usage error naming it."""
    code, output, plugin = collect(tmp_path, "def test_scores_shape():\n    pass\n")
    assert code == pytest.ExitCode.USAGE_ERROR, output
    assert "::test_scores_shape has no @pytest.mark.check marker" in output
    assert plugin.outcomes == {}


def test_a_check_without_points_fails_collection(tmp_path):
    """A check the settings give no points is a usage error naming the missing [points] entry."""
    code, output, _ = collect(tmp_path, check(FACTS, name="unpriced"))
    assert code == pytest.ExitCode.USAGE_ERROR, output
    assert "no [points] entry 'unpriced' in the settings" in output


def test_a_check_file_that_does_not_import_stops_the_run(tmp_path):
    """A check file that fails to import is a collection error: no check runs, no outcome (grade.py's grader error)."""
    code, output, plugin = collect(tmp_path, "import autograder.no_such_module\n\n" + check(FACTS))
    assert code == pytest.ExitCode.INTERRUPTED, output
    assert "No module named 'autograder.no_such_module'" in output
    assert plugin.outcomes == {}


def test_every_hidden_check_declares_valid_facts():
    """The real checks: every one names a function the reference defines, and every function is checked."""
    entries = catalogue()
    assert {entry.function for entry in entries} == set(FUNCTIONS)
    assert all(
        entry.picture is None
        or entry.function in ("causal_mask", "padding_mask", "masked_softmax", "scaled_dot_product_attention")
        for entry in entries
    )


def test_the_student_functions_come_from_the_reference():
    """One list: the reference's public functions and classes, in its order; the proxy knows what each returns."""
    assert FUNCTIONS == tuple(functions(inspect.getsource(ref)))  # as the source defines them, read without running it
    assert FUNCTIONS[0] == "attention_scores"
    assert all(callable(getattr(ref, name)) for name in FUNCTIONS)
    assert tuple(RETURNS) == FUNCTIONS
    # read from the annotations: a tensor, a number, a tuple named by the Returns section
    assert RETURNS["masked_softmax"] == "a tensor" and RETURNS["dot_product_variance"] == "a number"
    assert (
        RETURNS["scaled_dot_product_attention"]
        == RETURNS["MultiHeadAttention"]
        == "a tuple (output, weights) of tensors"
    )


def test_the_proxies_are_made_once_and_raise_no_pytest_deprecation(tmp_path):
    """Under the checks' own pytest.ini (where a pytest deprecation is an error), three checks get one student proxy
    and one reference proxy, the student's runner connected once and the reference's never (first use starts it); no
    PytestRemovedIn10Warning (session-scoped fixtures defined as instance methods, as the plugin's once were)."""
    connected = []
    source = "import pytest\n\nseen = set()\n" + "".join(
        f"\n\n@pytest.mark.check({FACTS})\ndef test_{name}(student, reference):\n"
        "    seen.add((id(student), id(reference)))\n    assert len(seen) == 1\n"
        for name in ("scores_shape", "scores_values", "scale_values")
    )
    code, output, plugin = collect(
        tmp_path,
        source,
        (Path(__file__).parents[2] / "autograder" / "checks" / "pytest.ini").read_text(),
        connect=lambda: connected.append("student") or object(),
        connect_reference=lambda: connected.append("reference") or object(),
    )
    assert code == pytest.ExitCode.OK, output
    assert "PytestRemoved" not in output and "Deprecat" not in output, output
    assert [o.status for o in plugin.outcomes.values()] == ["passed"] * 3
    assert connected == ["student"]


def test_a_spent_grading_budget_leaves_the_gpu_check_not_run():
    """The hidden checks run with the grading's time budget already spent, before any student code ran (the machine's
    load spent it: a budget the student's own calls spend is the student's time-out, tests/grading/test_busy_machine.py
    and tests/sandbox/test_time_bounds.py): every CPU check is the grader's error, which a batch grades again, without
    reaching the student's code, and the GPU check is not run, as for every submission on a machine without CUDA, so
    the maximum is the usual one (before: a failed GPU check, 2 points more)."""
    from autograder import scoring
    from autograder.grade import run_pytest

    settings = load_settings(None, environ={})
    reached = []
    plugin = GradingPlugin(lambda: reached.append("student"), settings, 0, "cpu", deadline=time.monotonic() - 1)
    code, output = run_pytest(plugin, settings)
    assert code == pytest.ExitCode.TESTS_FAILED and not reached, output[-2000:]
    outcomes = plugin.outcomes
    gpu = outcomes.pop("timing_gpu")
    assert (gpu.status, gpu.message) == ("not-run", "the grading machine has no CUDA device"), gpu
    busy = "the grading ran out of its 120 s by the clock while the student's code had 0.0 s of its own time"
    assert outcomes and all(o.status == "grader-error" and busy in o.message for o in outcomes.values())
    scored = scoring.score([*outcomes.values(), gpu], settings)
    full = sum(points for check, points in settings.points.items() if check != "timing_gpu")
    assert sum(s.max_score for s in scored) == full and sum(s.score for s in scored) == 0


def test_the_catalogue_reads_each_checks_facts_and_whether_it_compares_within_the_tolerances(tmp_path):
    """The catalogue reads a check's marker (points included), docstring and module from its source, and whether its
    code calls settings.tolerance(...), itself or through a function of its module (what makes it one of the bench's
    value checks); a helper that calls itself is read once."""
    marker = "@pytest.mark.check(function='masked_softmax', category='values', points=1.5, exercises=(), picture=None)"
    (tmp_path / "check_9_made.py").write_text(
        "import pytest\n\n\ndef _allowed(settings):\n    return settings.tolerance('float64')\n\n\n"
        "def _again(settings):\n    return _again(settings)\n\n\n"
        f"{marker}\ndef test_direct(settings):\n    '''Direct.\n\n    Details.'''\n"
        "    settings.tolerance('float32')\n\n\n"
        f"{marker}\ndef test_helper(settings):\n    _allowed(settings)\n\n\n"
        f"{marker}\ndef test_exact(settings):\n    _again(settings)\n    settings.tolerance.variance_rtol\n"
    )
    entries = catalogue(tmp_path)
    assert [(entry.check, entry.tolerance) for entry in entries] == [
        ("direct", True),
        ("helper", True),
        ("exact", False),
    ]
    assert (entries[0].points, entries[0].module, entries[0].doc) == (1.5, "check_9_made", "Direct.\n\nDetails.")


def test_the_bench_measures_the_checks_that_compare_within_the_tolerances():
    """bench/tolerances.py's value checks are the catalogue's that call settings.tolerance(...), less the timing checks
    (they check their answers, but judge time), and each of their modules is patched where it compares."""
    from bench.tolerances import MODULES, VALUE_CHECKS

    entries = catalogue()
    assert VALUE_CHECKS == tuple(e.check for e in entries if e.tolerance and e.category != "timing")
    assert {"sdpa_matches_torch", "mha_masks", "softmax_stability"} <= set(VALUE_CHECKS)
    assert not {"causal_square", "sdpa_lesson_shape", "sdpa_no_mutation", "timing_cpu"} & set(VALUE_CHECKS)
    assert {module.__name__.rsplit(".", 1)[1] for module in MODULES} == {
        e.module for e in entries if e.check in VALUE_CHECKS
    }
