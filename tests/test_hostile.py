"""Hostile submissions that attack the grader itself, graded with the worker as root and as an unprivileged user.

Each attack class of issue 22 has a submission under tests/submissions/overlays; tests/test_grading.py grades
them in the root batch, and this module grades them again with a worker that stays root (the grader's Python
closed to others: no privilege drop) and with one that runs as an unprivileged user. Either way the grade of
the attacking file changes only its own points (tests/grading_cases.py), every grading finishes with a result,
and no process of the sandbox is left.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from autograder.config import load_settings
from autograder.sandbox.processes import readable_by_others
from tests.grading_cases import CASES
from tests.helpers import REFERENCE, ROOT, SUBMISSIONS, run

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
)
FAST_LIMITS = "[limits]\ncall_timeout = 5.0\nload_timeout = 5.0\nafter_hang_timeout = 1.0\nmemory_mb = 2048\n"
POINTS = {name: points for name, points in load_settings().points.items() if name != "timing_gpu"}

# Grades every file named on the command line with one zygote (the worker root or unprivileged) and writes
# each result as JSON; prints the zygote's folder, so that the test can look for processes left behind.
GRADE_ALL = """
import json, sys
from pathlib import Path
from autograder.config import load_settings
from autograder.grade import grade
from autograder.sandbox import runner

mode, config, out, *files = sys.argv[1:]
settings = load_settings(config)
if mode == "root":  # as where the grader's Python lies in a folder others cannot read: no privilege drop
    runner.privilege_drop = lambda: (False, "the worker stays root (test)")
zygote = runner.Zygote(unprivileged_after_import=mode == "unprivileged")
zygote.wait_ready()
for path in map(Path, files):
    grading = grade(path, settings, zygote=zygote)
    (Path(out) / f"{path.stem}.json").write_text(json.dumps(grading.result))
print(zygote.folder)
zygote.close()
"""


@pytest.fixture(scope="module", params=["root", "unprivileged"])
def graded(request, tmp_path_factory):
    """The hostile submissions (and the reference, as a yardstick) graded with the worker in one mode."""
    if os.geteuid() != 0:
        pytest.skip("the tests do not run as root")
    site = Path(sysconfig.get_paths()["purelib"])
    if request.param == "unprivileged" and not readable_by_others(site):
        pytest.skip(f"an unprivileged user cannot reach {site}: a folder above it is closed to others")
    base = tmp_path_factory.mktemp(f"hostile-{request.param}")
    reference = REFERENCE.read_text()
    files = []
    for name in HOSTILE:
        path = base / f"{name}.py"
        path.write_text(f"{reference}\n\n# --- {name} ---\n{(SUBMISSIONS / 'overlays' / f'{name}.py').read_text()}")
        files.append(str(path))
    config, out = base / "fast.toml", base / "results"
    config.write_text(FAST_LIMITS)
    out.mkdir()
    done = run([sys.executable, "-c", GRADE_ALL, request.param, str(config), str(out), *files], cwd=ROOT, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return {"out": out, "zygote": done.stdout.split()[-1]}


@pytest.mark.parametrize("name", HOSTILE)
def test_an_attack_costs_only_its_own_points(graded, name):
    """The attacking file loses exactly the points of tests/grading_cases.py, with the feedback it names."""
    result = json.loads((graded["out"] / f"{name}.json").read_text())
    assert "grader_error" not in result, result.get("grader_error")
    failing, phrases = CASES[name]
    scores = {test["name"].split(": ")[1]: test for test in result["tests"]}
    for check, points in POINTS.items():
        assert scores[check]["score"] == (0 if check in failing else points), f"{check}: {scores[check]['output']}"
    for check, phrase in phrases.items():
        assert phrase in scores[check]["output"], scores[check]["output"]


def test_no_process_of_the_sandbox_is_left(graded):
    """Once the gradings end, no process started from that zygote's folder runs."""
    found = subprocess.run(["pgrep", "-f", graded["zygote"]], capture_output=True, text=True, check=False)
    assert found.stdout.strip() == ""
