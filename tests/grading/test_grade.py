"""The grading pipeline's process: what it imports, which plugins run the checks,
how many zygotes and threads it uses."""

from __future__ import annotations

import json
import os
import sys

import torch

from autograder.checks.timing import one_thread
from tests.helpers import REFERENCE, ROOT, run, total

# Grades the reference in a fresh Python and prints, as JSON, its score and what the process did.
GRADE_AND_REPORT = """
import json, sys
from pathlib import Path
from autograder.config import load_settings
from autograder.grade import grade, warm_up
import autograder.sandbox.client as client
import autograder.sandbox.zygote as zygotes

started = []
init = zygotes.Zygote.__init__
def counted(self, *args, **kwargs):
    started.append(1)
    init(self, *args, **kwargs)
zygotes.Zygote.__init__ = counted
closed = {"sandbox": [], "zygote": []}  # id of each object closed, once per close() call
for kind, cls in (("sandbox", client.Sandbox), ("zygote", zygotes.Zygote)):
    def closing(self, _close=cls.close, _seen=closed[kind]):
        _seen.append(id(self))
        _close(self)
    cls.close = closing

settings = load_settings()
zygote = None
if sys.argv[1] == "warm":  # as a batch does before forking its children
    zygote = zygotes.Zygote()
    warm_up(settings)
    zygote.wait_ready()
before = set(sys.modules)
grading = grade(Path(sys.argv[2]), settings, zygote=zygote)
closes = {kind: sorted(ids.count(i) for i in set(ids)) for kind, ids in closed.items()}
print(json.dumps({"score": grading.result["score"], "zygotes": len(started), "closes": closes,
                  "imported": sorted(set(sys.modules) - before), "grader_error": grading.grader_error}))
if zygote is not None:
    zygote.close()
"""


def graded(mode: str, env: dict | None = None) -> dict:
    done = run([sys.executable, "-c", GRADE_AND_REPORT, mode, str(REFERENCE)], cwd=ROOT, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_after_the_warm_up_a_grading_imports_nothing():
    """A batch's warm-up leaves nothing for a forked grading to import (pytest's plugins, the checks, sympy)."""
    report = graded("warm")
    assert report["score"] == total(), report["grader_error"]
    assert report["imported"] == []
    assert report["zygotes"] == 1  # the batch's: the reference's sandbox forks from it too


def test_one_grading_starts_one_zygote():
    """sdpa-grade grade FILE imports torch once: the reference's sandbox forks from the student's zygote; the grading
    closes the zygote and each of the two sandboxes once."""
    report = graded("cold")
    assert report["score"] == total(), report["grader_error"]
    assert report["zygotes"] == 1
    assert report["closes"] == {"sandbox": [1, 1], "zygote": [1]}


def test_a_pytest_plugin_installed_beside_the_grader_stays_out_of_the_checks(tmp_path):
    """A pytest plugin that any installed package declares (here one that drops every check) never runs the checks."""
    (tmp_path / "drop_every_check.py").write_text("def pytest_collection_modifyitems(items):\n    items.clear()\n")
    info = tmp_path / "drop_every_check-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: drop-every-check\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[pytest11]\ndrop = drop_every_check\n")
    report = graded("cold", env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert report["score"] == total(), report["grader_error"]
    assert "drop_every_check" not in report["imported"]


def test_one_thread_restores_the_callers_thread_count():
    """Inside, torch computes on one thread; afterwards the caller's setting is back."""
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with one_thread():
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(threads)
