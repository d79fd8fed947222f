"""Grading attack files with one zygote, the worker root or unprivileged, as the attack suites do
(test_hostile, test_fused_attention, test_bounded_parsing, test_time_bounds), and the rule they check."""

from __future__ import annotations

import json
import os
import sys
import sysconfig
from pathlib import Path

import pytest

from autograder.config import load_settings
from autograder.sandbox.processes import readable_by_others
from tests import helpers
from tests.grading_cases import CASES
from tests.helpers import FAST_LIMITS, REFERENCE, ROOT, SUBMISSIONS, run

MODES = ["root", "unprivileged"]
POINTS = {name: points for name, points in load_settings(environ={}).points.items() if name != "timing_gpu"}

# Grades every file named on the command line with one zygote (the worker root or unprivileged); writes each
# result as JSON with the wall time of its grade() beside it; prints the zygote's folder, so that a test can look
# for processes left behind. The zygote is forked from this process before anything of a grading is loaded, as
# `sdpa-grade grade` and `batch` fork theirs (cli.main), so that torch is imported once.
GRADE_ALL = """
import json, sys, time
from pathlib import Path
import autograder.sandbox.zygote as zygotes

mode, config, out, *files = sys.argv[1:]
if mode == "root":  # as where the grader's Python lies in a folder others cannot read: no privilege drop
    zygotes.privilege_drop = lambda: (False, "the worker stays root (test)")
zygote = zygotes.Zygote(unprivileged_after_import=mode == "unprivileged", fork=True)
from autograder.config import load_settings
from autograder.grade import grade

settings = load_settings(config)
zygote.wait_ready()
for path in map(Path, files):
    started = time.monotonic()
    grading = grade(path, settings, zygote=zygote)
    wall = time.monotonic() - started
    (Path(out) / f"{path.stem}.json").write_text(json.dumps({"result": grading.result, "wall": wall}))
print(zygote.folder)
zygote.close()
"""


def skip_unless_mode_possible(mode: str) -> None:
    """Skip where the worker cannot run in ``mode``: not root, or the venv closed to an unprivileged user."""
    if os.geteuid() != 0:
        pytest.skip("the tests do not run as root")
    site = Path(sysconfig.get_paths()["purelib"])
    if mode == "unprivileged" and not readable_by_others(site):
        pytest.skip(f"an unprivileged user cannot reach {site}: a folder above it is closed to others")


def overlaid(folder: Path, name: str, attacks: Path = SUBMISSIONS / "overlays") -> Path:
    """The reference with the attack ``attacks/name.py`` appended, as ``folder/name.py``."""
    path = folder / f"{name}.py"
    path.write_text(f"{REFERENCE.read_text()}\n\n# --- {name} ---\n{(attacks / f'{name}.py').read_text()}")
    return path


def grade_all(mode: str, base: Path, files: list[Path], limits: str = FAST_LIMITS, timeout: float = 120) -> dict:
    """Each file graded with one zygote in ``mode`` under ``limits``: {"results": {stem: {"result", "wall"}},
    "zygote": its folder}."""
    skip_unless_mode_possible(mode)
    config, out = base / "limits.toml", base / "results"
    config.write_text(limits)
    out.mkdir()
    command = [sys.executable, "-c", GRADE_ALL, mode, str(config), str(out), *map(str, files)]
    done = run(command, cwd=ROOT, timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    results = {path.stem: json.loads((out / f"{path.stem}.json").read_text()) for path in files}
    return {"results": results, "zygote": done.stdout.split()[-1]}


def checks_of(result: dict) -> dict[str, dict]:
    """A results file's hidden checks by name (its knowledge check's questions left out: helpers.checks_of)."""
    return {test["name"].split(": ")[1]: test for test in helpers.checks_of(result)}


def assert_costs_only_its_points(result: dict, name: str) -> None:
    """The attack ``name`` loses exactly the points tests/grading_cases.py names (all of them for ``{"*"}``), with
    the feedback it names, and keeps the rest."""
    assert "grader_error" not in result, result.get("grader_error")
    failing, phrases = CASES[name]
    lost = set(POINTS) if failing == {"*"} else failing
    scores = checks_of(result)
    for check, points in POINTS.items():
        assert scores[check]["score"] == (0 if check in lost else points), f"{check}: {scores[check]['output']}"
    assert result["score"] == sum(points for check, points in POINTS.items() if check not in lost)
    for check, phrase in phrases.items():  # a tuple: any one of these phrases (grading_cases.py)
        choices = (phrase,) if isinstance(phrase, str) else phrase
        assert any(p in scores[check]["output"] for p in choices), scores[check]["output"]
