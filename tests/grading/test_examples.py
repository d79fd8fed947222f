"""The README's first command: the bundled class in examples/class, graded as a newcomer first sees it."""

from __future__ import annotations

import json
import re

import pytest

from autograder.assignment.composition import functions
from tests.helpers import BIN, ROOT, maximum, run, total

EXAMPLES = ROOT / "examples" / "class"


def readme_commands() -> list[str]:
    """The commands of the README's first code block (set up and try, then test)."""
    block = re.search(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), re.DOTALL).group(1)
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.strip() and not line.startswith("#")]


def test_ci_runs_exactly_the_readme_commands():
    """.ci/run runs the README's two commands, word for word, in order, after installing the browser tests' chromium
    and the Slurm test's slurm-wlm, and opening the clone's folders for the unprivileged sandbox tests; between
    them, the README's lint command (ruff)."""
    ci = [
        line.strip()
        for line in (ROOT / ".ci" / "run").read_text().splitlines()
        if line.strip() and not line.startswith(("#", "set ", "cd "))
    ]
    set_up, test = readme_commands()
    blocks = re.findall(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), re.DOTALL)
    lint = next(block.strip() for block in blocks if "ruff" in block)  # the README's lint command, before the tests
    opening = ["bash .ci/install-chromium", "bash .ci/install-slurm", "bash .ci/open-checkout"]
    assert ci == [*opening, set_up, lint, test]


def test_first_command_installs_then_grades_the_example_class():
    """The first command installs, then grades examples/class in a temporary folder and shows one student's feedback."""
    first = readme_commands()[0]
    assert (
        "pip install" in first
        and "sdpa-grade batch examples/class" in first
        and "mktemp -d" in first
        and "--show" in first
    )


@pytest.mark.slow
def test_example_class_grades_as_its_files_say(tmp_path):
    """Alice full marks, Bob and Carol each a named classic mistake, Mallory's attacks change nothing;
    nothing written in the repository."""
    before = sorted(p.name for p in ROOT.joinpath("examples").rglob("*"))
    out = tmp_path / "grades"
    result = run(
        [str(BIN / "sdpa-grade"), "batch", str(EXAMPLES), "--json-dir", str(out), "--show", "bob"],
        cwd=ROOT,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    grades = {path.stem: json.loads(path.read_text()) for path in out.glob("*.json")}
    assert set(grades) == {"alice", "bob", "carol", "mallory"}
    # alice is right on every function her file defines (a function the assignment has and she lacks is not hers)
    wrote = set(functions((EXAMPLES / "alice.py").read_text()))
    own = [test for test in grades["alice"]["tests"] if test["tags"][0] in wrote]
    assert own and all(test["score"] == test["max_score"] for test in own)
    assert grades["alice"]["score"] == sum(test["max_score"] for test in own)
    assert grades["alice"]["max_score"] == maximum()
    mistakes = {name: {t["extra_data"]["mistake"] for t in g["tests"]} for name, g in grades.items()}
    assert "divide_by_dk" in mistakes["bob"] and "mask_inverted" in mistakes["carol"]
    assert grades["mallory"]["score"] < total() and "no_scale" in mistakes["mallory"]
    assert "bob's feedback:" in result.stdout and "divided by d_k, not by sqrt(d_k)" in result.stdout
    assert "Class summary: 4 submissions" in result.stdout
    flagged = result.stdout.split("Flagged for review", 1)[1].split("\n\n")[0]
    assert "mallory: integrity_sdpa: the source replaces torch's own functions" in flagged, flagged
    assert all(f"{name}:" not in flagged for name in ("alice", "bob", "carol")), flagged
    integrity = next(t for t in grades["mallory"]["tests"] if t["extra_data"]["check"] == "integrity_sdpa")
    for said in ("replaces torch's own functions", "imports the grader's reference", "writes files"):
        assert said in integrity["output"], integrity["output"]
    assert sorted(p.name for p in ROOT.joinpath("examples").rglob("*")) == before


def test_show_names_a_student_of_the_class(tmp_path):
    """--show with a name not in the class is a usage error (exit 2) that lists the students, before grading anyone."""
    result = run([str(BIN / "sdpa-grade"), "batch", str(EXAMPLES), "--json-dir", str(tmp_path / "g"), "--show", "zoe"])
    assert result.returncode == 2 and "alice" in result.stderr
    assert not (tmp_path / "g").exists()
