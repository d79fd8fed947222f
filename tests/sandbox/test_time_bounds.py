"""Time and CPU are bounded: each attack graded with the worker as root and as an unprivileged user, as
tests/sandbox/test_hostile.py grades the hostile submissions.

The attacks lie in tests/submissions/time/ (overlays on the reference, sized for the quick settings below): a reply
that starts late and trickles, answers that each come just within the call limit, and 64 spinning helpers. With
the 2 s call limit and the 45 s grading budget of ``QUICK`` (15 s for the late answers, which wait out the whole
budget), each grading shows its attack in under a minute.
"""

from __future__ import annotations

import dataclasses
import time

import pytest

import autograder.sandbox.client as client
import autograder.sandbox.zygote as zygotes
from autograder.config import load_settings
from autograder.sandbox.cgroups import CPU_SHARES, CPU_WEIGHT
from tests.attacks import MODES, POINTS, checks_of, overlaid, skip_unless_mode_possible
from tests.graded import Sandboxed
from tests.grading_cases import EVERYTHING_ABOVE_SDPA
from tests.helpers import REFERENCE, SUBMISSIONS

ATTACKS = SUBMISSIONS / "time"
# the budget: more than twice an honest grading on a machine loaded 20 to 40 times over (14 to 20 s there)
CALL_LIMIT, BUDGET = 2.0, 45.0


def quick(budget: float) -> str:
    """The quick settings: the 2 s call limit, with a grading budget of ``budget`` seconds."""
    return (
        f"[limits]\ncall_timeout = {CALL_LIMIT}\nload_timeout = 5.0\nafter_hang_timeout = 1.0\nmemory_mb = 2048\n"
        f"grading_budget = {budget}\n"
    )


QUICK = quick(BUDGET)


def _reference_and_trickle(base):
    reference = base / "reference.py"
    reference.write_text(REFERENCE.read_text())
    return [reference, overlaid(base, "trickle_after_first_byte", ATTACKS)]


# the reference (the yardstick) and the trickling reply, graded with the quick settings, the worker root or
# unprivileged (the graded fixture)
GRADED = Sandboxed(_reference_and_trickle, QUICK, timeout=120)
# answers each just within the limit, graded apart under a budget of its own: the grading waits out its whole budget,
# and a third of the yardstick's budget shows the same stop in 30 s less (tests/conftest.py's grading fixture)
LATE_BUDGET = 15.0
LATE = Sandboxed(
    lambda base: [overlaid(base, "late_answers", ATTACKS)],
    quick(LATE_BUDGET),
    timeout=120,
)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_the_quick_settings_fail_no_honest_check(graded):
    """The reference earns every point under the 2 s call limit and the 45 s budget."""
    result = graded["results"]["reference"]["result"]
    assert "grader_error" not in result, result.get("grader_error")
    for check, points in POINTS.items():
        assert checks_of(result)[check]["score"] == points, checks_of(result)[check]["output"]


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_reply_that_starts_late_and_trickles_misses_the_call_limit(graded):
    """A reply whose first byte comes at 0.6 s and whose last comes at 2.2 s misses a 2 s limit counted from the
    request: attention_output fails as the student's time-out (before, its deadline restarted at the first byte
    and the whole reply was taken), and what is built on it fails with it; every other check keeps its points."""
    result = graded["results"]["trickle_after_first_byte"]["result"]
    assert "grader_error" not in result, result.get("grader_error")
    checks = checks_of(result)
    failing = {"output_values"} | EVERYTHING_ABOVE_SDPA
    for check, points in POINTS.items():
        assert checks[check]["score"] == (0 if check in failing else points), f"{check}: {checks[check]['output']}"
    assert f"no complete answer within {CALL_LIMIT:g} s" in checks["output_values"]["output"]
    assert checks["output_values"]["extra_data"]["outcome"] == "failed"


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("mode", MODES)
def test_answers_each_just_within_the_limit_cannot_outlast_the_grading_budget(grading, mode):
    """Every answer 1.5 s late (no call times out): the grading stops at its budget (15 s here; 221 s before there
    was a budget, at 45 s), the checks still to run when it ran out fail as the student's time-outs saying so, those
    before keep their points, and the results file is written with a score that is their sum."""
    result = grading(LATE, mode)["results"]["late_answers"]["result"]
    assert "grader_error" not in result, result.get("grader_error")
    checks = checks_of(result)
    out_of_time = {name for name, test in checks.items() if "time budget" in test["output"]}
    assert out_of_time and out_of_time != set(checks), sorted(out_of_time)  # some checks ran, the rest did not
    for name in out_of_time:
        assert checks[name]["score"] == 0 and checks[name]["extra_data"]["outcome"] == "failed", checks[name]
        assert f"time budget of {LATE_BUDGET:g} s" in checks[name]["output"], checks[name]["output"]
    passed = {name for name, test in checks.items() if test["extra_data"]["outcome"] == "passed"}
    assert passed, "no check finished before the budget ran out"
    assert result["score"] == sum(test["score"] for test in result["tests"])


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("mode", ["root", "unprivileged"])
def test_every_process_of_a_sandbox_shares_one_cpu_weight(mode, tmp_path, monkeypatch):
    """A submission that forks 64 spinning helpers: the student's process and every helper sit in one CPU group
    of the sandbox's own, whose weight is the kernel's default for one process, so together they weigh no more
    than one honest student's process beside them."""
    skip_unless_mode_possible(mode)
    if mode == "root":
        monkeypatch.setattr(zygotes, "privilege_drop", lambda: (False, "the worker stays root (test)"))
    limits = dataclasses.asdict(load_settings(environ={}).limits)
    with zygotes.Zygote(unprivileged_after_import=mode == "unprivileged") as zygote:
        with client.Sandbox(overlaid(tmp_path, "spin_helpers", ATTACKS), limits, zygote=zygote) as sandbox:
            group = sandbox.cgroups.cpu_group
            if group is None:
                pytest.skip(f"no CPU controller for this grader here: {sandbox.cgroups.describe()}")
            assert sandbox.load().ok
            weight_file, weight = sandbox.cgroups.cpu_weight
            assert (weight_file, weight) in (CPU_SHARES, CPU_WEIGHT)  # the kernel's default for one process
            assert (group / weight_file).read_text().strip() == str(weight)
            deadline = time.monotonic() + 30
            while len((group / "cgroup.procs").read_text().split()) < 64 and time.monotonic() < deadline:
                time.sleep(0.1)
            members = set((group / "cgroup.procs").read_text().split())
            assert len(members) >= 65, len(members)  # the student's process and its 64 helpers (and the keeper)
            assert str(sandbox._measured) in members
        assert not group.exists()  # removed with the sandbox, its spinners killed
