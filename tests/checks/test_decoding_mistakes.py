"""The optional decoding part's named mistakes (checks/mistakes.py ``gqa_variants``, ``decoding_variants``), each a
submission under tests/submissions/overlays/: with the part on, each loses exactly its checks and its feedback names
it (tests/decoding_cases.py); a mistake in the student's attention costs only the attention's checks. The part's
checks run in this process on a few seeds (bench/decoding_mistakes.py runs 50); each submission is also graded once
for real, through ``sdpa-grade batch`` and its sandbox (slow)."""

from __future__ import annotations

import json

import pytest

from autograder.config import load_settings
from autograder.grade import _pytest
from autograder.plugin import GradingPlugin
from autograder.scoring import score
from tests.decoding_cases import MISTAKES, ON, PART_CHECKS, SETTINGS, graded, mistake, problems, sentence
from tests.helpers import BIN, checks_of, run, with_overlay
from tests.in_process import InProcess


def test_the_reference_loses_nothing():
    assert {check: lost for check, (lost, _, _) in graded(None, 0).items() if lost} == {}
    assert set(graded(None, 1)) == PART_CHECKS


@pytest.mark.timeout(120)
@pytest.mark.parametrize("overlay", sorted(MISTAKES))
def test_a_decoding_mistake_loses_its_checks_and_is_named(overlay):
    for seed in range(3):
        assert problems(overlay, graded(overlay, seed)) == [], seed


def test_a_reply_with_a_value_too_many_is_the_students_failed_check():
    """(output, weights, extra) from grouped_query_attention or attend_with_cache fails their checks, saying so: never
    the grader's error."""
    extra = """
_right_gqa, _right_decode = grouped_query_attention, attend_with_cache


def grouped_query_attention(Q, K, V, mask=None, is_causal=False):
    return (*_right_gqa(Q, K, V, mask, is_causal), Q)


def attend_with_cache(Q_new, K_new, V_new, cache, mask=None):
    K_all, V_all = cache.append(K_new, V_new)
    T_new, T = Q_new.size(-2), len(cache)
    causal = torch.ones(T_new, T, dtype=torch.bool).tril(T - T_new)
    return (*_right_gqa(Q_new, K_all, V_all, causal if mask is None else mask & causal), Q_new)
"""
    found = graded(None, 0, source=with_overlay(None) + extra)
    assert {check for check, (points, _, _) in found.items() if points} >= {"gqa_matches_torch", "decoding_alignment"}
    assert "returned 3 values" in found["gqa_matches_torch"][2]
    assert "attend_with_cache returned 3 values" in found["decoding_matches_full_pass"][2]


def _lost_without_timing(overlay: str, settings) -> dict[str, float]:
    """check -> points lost, every check but the timing ones (in this process, their measure means nothing)."""
    namespace: dict = {}
    exec(compile(with_overlay(overlay), "attention.py", "exec"), namespace)  # noqa: S102 - the suite's own files
    runner = InProcess(namespace)
    plugin = GradingPlugin(lambda: runner, settings, 0, "cpu")
    _pytest(plugin, "-k", "not timing", "--timeout", "120")
    scored = score(list(plugin.outcomes.values()), settings)
    return {item.outcome.check: item.max_score - item.score for item in scored if item.max_score > item.score}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("overlay", ["mistake_divide_by_dk", "mistake_query_axis", "mistake_transpose_12"])
def test_a_mistake_in_the_attention_costs_only_the_attentions_checks_with_the_part_on(overlay):
    """A wrong scale, a softmax over the wrong axis (wrong values) and a transpose that raises on the part's 4-D heads:
    with the part on, the same checks lose the same points as with it off; the part's own keep theirs (carried)."""
    off = _lost_without_timing(overlay, load_settings(environ={}))
    assert off, "the mistake costs something"
    assert _lost_without_timing(overlay, SETTINGS) == off


@pytest.fixture(scope="module")
def sandboxed(tmp_path_factory):
    """Each mistake's submission graded with the part on through the real command: file stem -> its results."""
    folder, out = tmp_path_factory.mktemp("class"), tmp_path_factory.mktemp("out")
    for overlay in MISTAKES:
        (folder / f"{overlay}.py").write_text(with_overlay(overlay))
    args = [str(BIN / "sdpa-grade"), "batch", str(folder), "--config", str(ON), "--jobs", "2", "--json-dir", str(out)]
    result = run(args, timeout=900)
    assert result.returncode == 0, result.stderr[-2000:]
    return {path.stem: json.loads(path.read_text()) for path in out.glob("*.json")}


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("overlay", sorted(MISTAKES))
def test_a_decoding_mistake_graded_in_the_sandbox_loses_its_checks_and_is_named(sandboxed, overlay):
    """The real grading agrees with the in-process one: the same checks lost, the mistake named in the feedback."""
    always, named = MISTAKES[overlay]
    tests = {t["extra_data"]["check"]: t for t in checks_of(sandboxed[overlay])}  # the quiz: not in an attention.py
    lost = {check for check, t in tests.items() if t["score"] < t["max_score"]}
    assert lost == always
    for check in named:
        assert tests[check]["extra_data"]["mistake"] == mistake(overlay)
        assert sentence(overlay) in tests[check]["output"]
    assert sandboxed[overlay]["score"] == sum(t["score"] for t in sandboxed[overlay]["tests"])
