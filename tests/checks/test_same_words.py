"""The same file gets the same words (issue 53): a check's feedback, named mistake, likely cause and the functions it
builds on are a function of the code and the settings, not of the draw or of the machine's load.

Graded through the real path, the hidden checks' own pytest run with the grading plugin (its substituted rerun
included, checks/substitution.py), the student's functions in this process (tests/in_process.py): the value checks
of the attention's functions and the module, on several seeds. The load's part: a grader's failure while the
substituted rerun runs (the machine kept the worker from a CPU: ``GraderBusy``) is the grader's error, which a batch
grades again, never a failure left without its cause. Such a failure cannot be made to happen on demand on a real
machine, so the runner below raises the sandbox's own exception where the sandbox would: in a substituted call.
"""

from __future__ import annotations

import pytest

from autograder.config import load_settings
from autograder.grade import _pytest
from autograder.plugin import GradingPlugin, Outcome
from autograder.sandbox.client import GraderBusy
from autograder.status import Status
from tests.helpers import with_overlay, words_of
from tests.in_process import InProcess

SETTINGS = load_settings(environ={})
SEEDS = (3, 11, 29, 47, 58)
MISTAKE = "mistake_divide_by_dk"
# the value checks of the functions the mistake touches (the others pass on every seed): scale_scores, the attention
# and the module (timing needs the reference's worker, the integrity checks read a source this runner has not)
VALUES = "(scale or sdpa or mha) and not timing and not integrity"


def _namespace(overlay: str) -> dict:
    namespace: dict = {}
    exec(compile(with_overlay(overlay), "attention.py", "exec"), namespace)  # noqa: S102 - the suite's own submissions
    return namespace


def _graded(runner: InProcess, seed: int, selected: str) -> dict[str, Outcome]:
    """The outcomes of the checks ``selected`` (pytest's -k) for ``runner``'s functions, graded with ``seed``."""
    plugin = GradingPlugin(lambda: runner, SETTINGS, seed, "cpu")
    _pytest(plugin, "-k", selected)
    return plugin.outcomes


def _words(outcome: Outcome) -> tuple:
    """What a check says, without the draw's numbers (sizes, errors, indices): its status, its feedback with every
    number as #, its named mistake, likely cause, flag and the functions it builds on."""
    message = words_of(outcome.message)
    return (outcome.status, message, outcome.mistake, outcome.cause, outcome.flag, outcome.builds_on)


@pytest.mark.timeout(120)
def test_dividing_by_d_k_gets_the_same_words_on_every_seed():
    """Every value check of the attention's functions and the module gives the same feedback, named mistake, cause
    and carried functions for the divide-by-d_k file whatever the seed, and every check it fails gives a cause."""
    said = {seed: _graded(InProcess(_namespace(MISTAKE)), seed, VALUES) for seed in SEEDS}
    checks = set(said[SEEDS[0]])
    assert all(set(outcomes) == checks for outcomes in said.values())
    failing = 0
    for check in sorted(checks):
        words = {seed: _words(said[seed][check]) for seed in SEEDS}
        assert len(set(words.values())) == 1, (check, words)
        status, _, _, cause, _, _ = words[SEEDS[0]]
        assert status is not Status.GRADER_ERROR, (check, words)
        if status is Status.FAILED:
            failing += 1
            assert cause, f"{check} failed without a likely cause"
    assert failing >= 2, "the mistake failed too few checks to compare"


class _BusyOnSubstitution(InProcess):
    """The student's functions in this process, but every substituted call (the plugin's rerun of a failed check with
    the functions it builds on answered by the reference) fails as the sandbox fails a call that a busy machine kept
    from a CPU."""

    def call(self, target: str, args=(), kwargs=None, *, timeout: float, **options):
        if options.get("substitute") is not None:
            raise GraderBusy("a call had 0.1 s of the student's own time in 30 s by the clock (a test's runner)")
        return super().call(target, args, kwargs, timeout=timeout, **options)


@pytest.mark.parametrize("check", ["sdpa_dtypes", "sdpa_gradients"])
def test_a_busy_machine_in_the_substituted_rerun_is_the_graders_error(check):
    """Where the check's only cause is its substituted rerun, a busy machine during that rerun makes the check the
    grader's error (which a batch grades again), naming GraderBusy: never a failure without a cause, nor lost
    points charged to the student. (scale_values runs first: scale_scores fails a check of its own, so it may stand
    in.)"""
    outcome = _graded(_BusyOnSubstitution(_namespace(MISTAKE)), SEEDS[0], f"scale_values or {check}")[check]
    assert outcome.status is Status.GRADER_ERROR, outcome
    assert "GraderBusy" in outcome.message and "machine" not in outcome.cause, outcome


def test_without_a_busy_machine_the_same_checks_build_on_what_they_build_on():
    """The same runner's functions, no failure in the rerun: the check fails, carried to scale_scores (the busy test
    above compares with this)."""
    outcome = _graded(InProcess(_namespace(MISTAKE)), SEEDS[0], "scale_values or sdpa_dtypes")["sdpa_dtypes"]
    assert outcome.status is Status.FAILED and outcome.builds_on == ("scale_scores",), outcome
