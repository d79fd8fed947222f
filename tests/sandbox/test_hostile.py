"""Hostile submissions that attack the grader itself, graded with the worker as root and as an unprivileged user.

Each attack class has a submission under tests/submissions/overlays; tests/grading/test_grading_hostile.py
grades them in the root batch, and this module grades them again with a worker that stays root (the grader's Python
closed to others: no privilege drop) and with one that runs as an unprivileged user. Either way the grade of
the attacking file changes only its own points (tests/grading_cases.py), every grading finishes with a result,
and no process of the sandbox is left.
"""

from __future__ import annotations

import subprocess

import pytest

from tests.attacks import assert_costs_only_its_points, overlaid
from tests.graded import Sandboxed

pytestmark = pytest.mark.slow  # two small classes, graded in full: a few minutes

HOSTILE = (
    "shrink_shared_memory",
    "trickle_reply",
    "forged_empty_gradients",
    "forged_markers",
    "cheat_fused_raw_thread",
    "scan_bomb",
    "picture_bomb",
    "terminal_escapes",
    "wire_unhashable_reply",  # a parsing attack (tests/reading/test_bounded_parsing.py)
)


# the hostile submissions graded with one zygote, the worker root or unprivileged (the graded fixture)
GRADED = Sandboxed(lambda base: [overlaid(base, name) for name in HOSTILE])


@pytest.mark.parametrize("name", HOSTILE)
def test_an_attack_costs_only_its_own_points(graded, name):
    """The attacking file loses exactly the points of tests/grading_cases.py, with the feedback it names."""
    assert_costs_only_its_points(graded["results"][name]["result"], name)


def test_no_process_of_the_sandbox_is_left(graded):
    """Once the gradings end, no process started from that zygote's folder runs."""
    found = subprocess.run(["pgrep", "-f", graded["zygote"]], capture_output=True, text=True, check=False)
    assert found.stdout.strip() == ""
