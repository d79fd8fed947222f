"""Every attacking, crashing or odd submission of the grading cases (tests/grading_cases.py): standalone files and
overlays that are neither honest nor a mistake, graded by real `sdpa-grade batch` runs (a few parts of the class, each
its own batch), score exactly as stated; the honest and mistaken ones are tests/grading/test_grading.py's."""

from __future__ import annotations

import subprocess
from collections import Counter

import pytest

from autograder.config import load_settings
from tests.attacks import POINTS as SCORED
from tests.graded import Cases, is_work
from tests.grading_cases import CASES
from tests.helpers import checks_of, total

pytestmark = pytest.mark.slow  # a real batch: minutes

# the attacking, crashing and odd submissions graded once, two at a time, in six parts of about 11 (the graded
# fixture: one batch of all 65 took 175 s)
GRADED = Cases(lambda name: not is_work(name), parts=6)


def test_the_batch_finished_cleanly(graded):
    """Each part's batch exits 0 and prints the class summary, whatever the class did."""
    assert graded["result"].returncode == 0, graded["result"].stderr[-3000:]
    assert "Class summary" in graded["result"].stdout


@GRADED.having("cheat_fused_record_off")
def test_integrity_flags_travel_as_fields(graded):
    """An integrity flag is a field of its test (extra_data)."""
    tests = graded["results"]["cheat_fused_record_off"]["tests"]
    assert "dynamic_reach" in {test["extra_data"]["flag"] for test in tests}


@GRADED.each(["cheat_fused_record_off", "cheat_fused_in_thread", "cheat_patch_handler", "cheat_fused",
              "patch_torch_compare", "fake_results", "write_outside_at_import"])  # fmt: skip
def test_the_class_summary_lists_the_flagged_students(graded, name):
    """The class summary of the batch that graded a flagged student lists the student for review."""
    assert f"  {name}: " in graded["result"].stdout.split("Flagged for review", 1)[1]


@GRADED.each(sorted(name for name in CASES if not is_work(name)))
def test_submission_scores_exactly(graded, name):
    """The failing checks earn 0, the others full points, and the feedback names the problem."""
    failing, phrases = CASES[name]
    result = graded["results"][name]
    scores = {test["name"].split(": ")[1]: test for test in checks_of(result)}  # an attention.py: the quiz is 0
    assert set(scores) == set(load_settings().points)
    expected_zero = set(SCORED) if failing == {"*"} else failing
    for check, points in SCORED.items():
        want = 0 if check in expected_zero else points
        assert scores[check]["score"] == want, f"{check}: {scores[check]['output']}"
        assert scores[check]["max_score"] == points
    assert result["score"] == sum(test["score"] for test in result["tests"])
    assert result["score"] == sum(p for check, p in SCORED.items() if check not in expected_zero)
    for check, phrase in phrases.items():  # a tuple: any one of these phrases
        choices = (phrase,) if isinstance(phrase, str) else phrase
        assert any(p in scores[check]["output"] for p in choices), scores[check]["output"]


@GRADED.having("empty")
def test_empty_file_is_ungradable(graded):
    """An empty attention.py gets a clear reason and 0, with a valid results file."""
    result = graded["results"]["empty"]
    assert result["score"] == 0
    assert "is empty" in result["ungradable"]


@GRADED.having("hang_in_softmax")
def test_a_function_that_hangs_is_waited_on_once(graded):
    """A submission that hangs is not waited on at full length for every call: each function that hung waited out
    its limit once, and every later check of it was refused at once, counted in the results, not timed."""
    tests = graded["results"]["hang_in_softmax"]["tests"]
    waited = Counter(test["name"].split(": ")[0] for test in tests if "no answer within" in test["output"])
    refused = Counter(
        test["name"].split(": ")[0] for test in tests if "did not finish in an earlier call" in test["output"]
    )
    assert "masked_softmax" in waited and set(waited.values()) == {1}, waited
    assert refused["masked_softmax"] >= 1 and set(refused) <= set(waited), refused


def test_no_process_outlives_grading(graded):
    """Processes a submission started, daemons included, are gone when each part's grading ends."""
    found = subprocess.run(["pgrep", "-f", "sleep 98765"], capture_output=True, text=True)
    forked = subprocess.run(["pgrep", "sleep98765"], capture_output=True, text=True)  # where exec is refused
    assert found.stdout.strip() == "" and forked.stdout.strip() == ""


@GRADED.having("fake_results")
def test_fake_results_do_not_count(graded):
    """A submission that writes a results.json does not change the grade the grader writes."""
    assert graded["results"]["fake_results"]["score"] < total()
