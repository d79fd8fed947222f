"""Graders side by side on a busy machine give the grades each gives alone (bench/side_by_side.py, run for real)."""

from __future__ import annotations

import json
import os
import sys
import sysconfig
from pathlib import Path

import pytest

from autograder.sandbox.processes import NOBODY, readable_by_others
from tests.helpers import ROOT, run

MODES = ["root", "unprivileged"]


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("mode", MODES)
def test_three_graders_beside_two_busy_processes_grade_as_alone(mode):
    """3 `sdpa-grade` at once, each with its own TMPDIR, beside 2 busy processes, on a correct, a wrong and a
    looping submission: every grade equals that submission's grade alone, check by check; no grader error; no
    process and no cgroup left."""
    user = []
    if mode == "root" and os.geteuid() != 0:
        pytest.skip("the tests do not run as root")
    if mode == "unprivileged" and os.geteuid() == 0:
        needed = (Path(sys.executable).resolve(), ROOT / "pyproject.toml", Path(sysconfig.get_paths()["purelib"]))
        if not all(readable_by_others(path) for path in needed):
            pytest.skip("an unprivileged user cannot run this Python or reach the install: a folder above it is closed")
        user = ["--user", str(NOBODY)]
    result = run(
        [
            sys.executable,
            str(ROOT / "bench" / "side_by_side.py"),
            "--graders",
            "3",
            "--rounds",
            "1",
            "--busy",
            "2",
            "--only",
            "reference,mistake_no_scale,mistake_loop_only_without_mask",
            "--json",
            *user,
        ],
        timeout=1100,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    figures = json.loads(result.stdout.strip().splitlines()[-1])
    assert figures["quiet_grader_errors"] == 0, result.stdout
    assert figures["gradings"] == 3 and figures["same_as_alone"] == 3, result.stdout
    assert figures["grader_errors"] == 0 and figures["other_exits"] == 0, result.stdout
    assert figures["leftover_processes"] == 0 and figures["leftover_cgroups"] == 0, result.stdout
