"""Each verb of `sdpa-grade` speaks in its own name: its help, its usage errors and its refusals, as an instructor
meets them in a terminal (the real command, in a subprocess)."""

from __future__ import annotations

import pytest

from autograder.cli import VERBS
from tests.helpers import BIN, run

# each verb's command line with the folder (or file) it takes missing: NOWHERE stands for it
MISSING = {
    "grade": ["NOWHERE"],
    "batch": ["NOWHERE"],
    "summary": ["NOWHERE"],
    "push": ["NOWHERE", "--offline"],  # offline: no [lti] needed, so the folder is what is refused
    "hold": ["NOWHERE", "alice", "--reason", "why"],
    "clear": ["NOWHERE", "alice"],
    "override": ["NOWHERE", "alice", "10", "--reason", "why"],
    "extend": ["NOWHERE", "alice", "--until", "2026-12-08T00:00:00+00:00", "--reason", "why"],
    "undo": ["NOWHERE", "alice"],
    "diff": ["NOWHERE", "."],
}
OLDER = ("--batch", "--summary-only", "sdpa-grade:")  # an older form's words, or the command's name without the verb


def test_every_verb_is_listed_here():
    """A verb added to the command is added to this file's errors too."""
    assert sorted(MISSING) == sorted(VERBS)


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_each_verbs_help_and_errors_name_that_verb(tmp_path, verb):
    """`VERB --help`, a missing folder and an option no verb has: each answer names `sdpa-grade VERB`, never an older
    form or the bare command."""
    said = f"sdpa-grade {verb}"
    helped = run([str(BIN / "sdpa-grade"), verb, "--help"], cwd=tmp_path, timeout=60)
    assert helped.returncode == 0 and helped.stdout.startswith(f"usage: {said} "), helped.stdout
    argv = [str(tmp_path / "nowhere") if word == "NOWHERE" else word for word in MISSING[verb]]
    for words, code in ((argv, 2), ([*argv, "--no-such-option"], 2)):
        done = run([str(BIN / "sdpa-grade"), verb, *words], cwd=tmp_path, timeout=120)
        usage = done.stderr.startswith("usage:")  # argparse's usage (its lines indented after the first), then one line
        lines = [line for line in done.stderr.strip().splitlines() if not (usage and line.startswith(("usage:", " ")))]
        assert done.returncode == code, (words, done.returncode, done.stderr)
        assert lines and lines[-1].startswith(f"{said}: "), (words, done.stderr)
        assert not any(old in line for line in lines for old in OLDER), (words, done.stderr)
