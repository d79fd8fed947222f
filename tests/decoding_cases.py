"""The optional decoding part's named mistakes (tests/submissions/overlays/), graded with the part on in this process
(tests/in_process.py), and what each must lose: read by tests/checks/test_decoding_mistakes.py (a few seeds) and
bench/decoding_mistakes.py (50, the table in docs/grading.md)."""

from __future__ import annotations

from autograder.assignment.catalogue import catalogue
from autograder.checks.mistakes import SENTENCES
from autograder.config import Parts, load_settings
from autograder.grade import _pytest
from autograder.plugin import GradingPlugin
from autograder.render.text import output_text
from autograder.scoring import score
from tests.helpers import ROOT, with_overlay
from tests.in_process import InProcess

ON = ROOT / "tests" / "decoding_on.toml"
SETTINGS = load_settings(ON, environ={})
PART = set(Parts.functions("decoding"))
PART_CHECKS = {entry.check for entry in catalogue() if entry.function in PART}
SELECT = "gqa or kvcache or decoding"  # the part's checks by their names (test_gqa_..., test_kvcache_..., ...)
DECODING = {"decoding_matches_full_pass", "decoding_alignment", "decoding_gradients"}
# overlay -> (the checks it loses on every seed; those of them whose feedback names the mistake). integrity_decoding
# is gated: withheld (worth nothing yet) while gqa_matches_torch fails for a mistake of its own
MISTAKES = {
    "mistake_decoding_top_left": (DECODING, {"decoding_matches_full_pass", "decoding_alignment"}),
    "mistake_decoding_cache_unused": (
        DECODING | {"decoding_no_mutation"},  # a mask for all the keys does not fit the new ones alone: it raises
        {"decoding_matches_full_pass", "decoding_alignment"},
    ),
    "mistake_gqa_tiled": ({"gqa_matches_torch", "gqa_gradients", "integrity_decoding"}, {"gqa_matches_torch"}),
    # attend_with_cache's checks fail too (its len() never grows past a chunk), and keep their points: carried to
    # KVCache, which stands in for them (checks/substitution.py)
    "mistake_cache_head_axis": ({"kvcache_append", "kvcache_cap"}, {"kvcache_append"}),
    "mistake_cache_no_cap": ({"kvcache_cap"}, {"kvcache_cap"}),
}


def mistake(overlay: str) -> str:
    return overlay.removeprefix("mistake_")


def sentence(overlay: str) -> str:
    return SENTENCES[mistake(overlay)]


def graded(
    overlay: str | None, seed: int, select: str = SELECT, source: str | None = None
) -> dict[str, tuple[float, str, str]]:
    """check -> (points lost, the outcome's named mistake, the feedback), for the checks ``select`` picks (-k), of the
    overlay's submission (or of ``source``)."""
    namespace: dict = {}
    code = with_overlay(overlay) if source is None else source
    exec(compile(code, "attention.py", "exec"), namespace)  # noqa: S102 - the suite's own files
    runner = InProcess(namespace)
    plugin = GradingPlugin(lambda: runner, SETTINGS, seed, "cpu")
    _pytest(plugin, "-k", select, "--timeout", "120")
    return {
        item.outcome.check: (item.max_score - item.score, item.outcome.mistake, output_text(item))
        for item in score(list(plugin.outcomes.values()), SETTINGS)
    }


def problems(overlay: str, found: dict[str, tuple[float, str, str]]) -> list[str]:
    """What is wrong with one grading of ``overlay``: a check lost beyond its own, or kept; a named check that does
    not name it, or says another sentence; another mistake named anywhere."""
    lost_always, named = MISTAKES[overlay]
    lost = {check for check, (points, _, _) in found.items() if points}
    said = []
    if lost != lost_always:
        said.append(f"lost {sorted(lost)}, expected {sorted(lost_always)}")
    for check in named:
        _, name, feedback = found[check]
        if name != mistake(overlay) or sentence(overlay) not in feedback:
            said.append(f"{check} named {name!r}")
    said += [f"{check} named {name!r}" for check, (_, name, _) in found.items() if name not in ("", mistake(overlay))]
    return said
