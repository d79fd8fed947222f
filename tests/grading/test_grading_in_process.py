"""The grading cases of tests/grading_cases.py, graded in this process: the value checks through the checks' proxy
(tests/one_mistake.py, no sandbox), then scored as the batch scores them (the carried-cause rule, the gates
withheld). Each case loses exactly the points the batches' tests (tests/grading/test_grading.py and
test_grading_hostile.py) assert, with the same hints, and each classic one-function mistake (tests/one_mistake.py's
ONE_FUNCTION) its own function's checks alone; the cases this harness cannot judge are named below with the reason,
and the slow batch grades every case for real.
"""

from __future__ import annotations

import functools

import pytest
import torch

from autograder.assignment.catalogue import catalogue
from autograder.scoring import GATED
from tests.grading_cases import ABSENT, CASES, DEDUCTED, DEDUCTED_HERE, GATES_MEASURED, JUDGED, SANDBOX_ONLY
from tests.helpers import SUBMISSIONS
from tests.one_mistake import ONE_FUNCTION, SETTINGS, outcomes, own_checks, scored

SEED = 3
GATES = {entry.check for entry in catalogue() if entry.category in GATED}

DEDUCT = SETTINGS.replace("scoring", borrowed="deduct")
_outcomes = functools.cache(outcomes)  # a case's checks run once for this module's tests


def graded(name: str, settings=SETTINGS) -> dict[str, tuple[float, float, str]]:
    """check -> (score, max_score, results.json's output) for the case ``name`` at SEED, scored under ``settings``."""
    return scored(_outcomes(None if name == "reference" else name, SEED), settings)


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """One torch thread, as the worker has (and many small calls run faster so)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(autouse=True)
def torch_as_it_was():
    """A case runs its module in this process: what it patches in torch (patch_torch_compare's torch.equal, ...) is
    put back after it, so that no later test of this process compares with the student's functions."""
    import torch.nn.functional
    import torch.testing

    namespaces = (torch, torch.Tensor, torch.nn.functional, torch.testing)
    saved = [dict(vars(namespace)) for namespace in namespaces]
    yield
    for namespace, before in zip(namespaces, saved):
        for key, value in before.items():
            if vars(namespace).get(key) is not value:
                setattr(namespace, key, value)


def test_every_case_is_judged_here_or_named_with_its_reason():
    """Each case of CASES is graded here, or listed as the sandbox's alone; each overlay judged here exists."""
    assert set(SANDBOX_ONLY) <= set(CASES) and set(GATES_MEASURED) <= set(JUDGED)
    assert all((SUBMISSIONS / "overlays" / f"{name}.py").is_file() for name in JUDGED if name != "reference")


@pytest.mark.timeout(60)
@pytest.mark.filterwarnings("ignore:a warning at import must cost nothing")  # warnings_printed's, at its import
@pytest.mark.parametrize("name", JUDGED)
def test_a_case_loses_in_process_what_it_loses_in_the_batch(name):
    """The checks that earn nothing are CASES' (its gates too, unless they lose for a measure taken only in the
    sandbox), each hint says what CASES names, and ABSENT's claims are not made."""
    failing, phrases = CASES[name]
    checks = graded(name)
    lost = {check for check, (score, max_score, _) in checks.items() if score < max_score}
    expected = {check for check in checks if check != "timing_gpu"} if failing == {"*"} else failing
    if name in GATES_MEASURED:  # the gates the harness passes may lose for their measure in the sandbox alone
        assert lost - GATES == expected - GATES and lost & GATES <= expected & GATES, sorted(lost ^ expected)
    else:
        assert lost == expected, f"lost also {sorted(lost - expected)}, kept {sorted(expected - lost)}"
    for check, phrase in phrases.items():  # a tuple: any one of these phrases
        if name in GATES_MEASURED and check in GATES:
            continue
        output = checks[check][2]
        assert any(p in output for p in ((phrase,) if isinstance(phrase, str) else phrase)), f"{check}: {output}"
    for check, phrase in ABSENT.get(name, {}).items():
        assert phrase not in checks[check][2], f"{check}: {checks[check][2]}"
    if name in ONE_FUNCTION:  # a classic one-function mistake costs its points once, where it is made
        assert lost, "the mistake costs nothing: it is not caught"
        assert lost - own_checks(ONE_FUNCTION[name]) == set(), f"beyond {ONE_FUNCTION[name]}: {sorted(lost)}"


@pytest.mark.parametrize("name", DEDUCTED_HERE)
def test_deduct_takes_the_points_of_before(name):
    """Under "deduct" a failure that builds on another function's mistake costs its points, and the gates it closes,
    as before the policy: exactly the default's losses and DEDUCTED's, and no "Correct once" anywhere (the case's
    outcomes above, scored again)."""
    failing = CASES[name][0] | DEDUCTED[name]
    assert not CASES[name][0] & DEDUCTED[name]
    checks = graded(name, DEDUCT)
    for check, (earned, worth, output) in checks.items():
        if check != "timing_gpu":  # 0 of 0 without a GPU
            assert earned == (0 if check in failing else worth), f"{check}: {output}"
        assert "Correct once" not in output, f"{check}: {output}"
    assert sum(earned for earned, _, _ in checks.values()) == sum(
        worth for check, (_, worth, _) in checks.items() if check not in failing
    )
