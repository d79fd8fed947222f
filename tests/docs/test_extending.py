"""docs/extending.md's worked example, applied as written to a copy of the project: the guide cannot rot.

The guide's pieces are its code blocks, each under a line naming the file it goes into (appended, or a new file).
The copy is the project's tracked files; its own autograder and reference are the ones imported there
(``PYTHONPATH``), so the build and the grading run on the copy's code.
"""

from __future__ import annotations

import doctest
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from autograder.release.template import stub_source
from tests.helpers import BUILD, ROOT, checks_of, quiz_points, tracked_copy

GUIDE = ROOT / "docs" / "extending.md"
# a piece: "**`path`**, appended at the end:" or "**`path`**, a new file:", then its fenced block
PIECE = re.compile(
    r"^\*\*`(?P<path>[^`]+)`\*\*, (?P<how>appended at the end|a new file):\n\n```\w+\n(?P<code>.*?)^```$", re.M | re.S
)
FUNCTION = "sliding_window_mask"
CHECK = "window_values"
BUILT = "windowed_attention"  # the guide's function built on the attention (and on FUNCTION)
BUILT_CHECK = "windowed_values"
# the wrong body the guide names: it ignores the window (a plain causal mask)
RIGHT_LINE = "    return torch.tril(allowed) & ~torch.tril(allowed, diagonal=-window)\n"
WRONG_LINE = "    return torch.tril(allowed)\n"
GRADE = "import sys; from autograder.cli import run; sys.argv[0] = 'sdpa-grade'; run()"  # sdpa-grade, the copy's


def pieces() -> list[tuple[str, str, str]]:
    """The guide's pieces: (path, how, code), in its order."""
    return [(m["path"], m["how"], m["code"]) for m in PIECE.finditer(GUIDE.read_text())]


def run(args: list[str], cwd, **kwargs) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(cwd)}
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, **kwargs)


def git(cwd, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


@pytest.fixture(scope="module")
def extended(tmp_path_factory):
    """A copy of the project (its tracked files, committed in a fresh repository) with the guide's three pieces
    applied and `sdpa-build` run, as a new TA would do it."""
    copy = tracked_copy(tmp_path_factory.mktemp("extended"))
    git(copy, "init", "-q")
    git(copy, "add", "-A")
    git(copy, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "before")
    for path, how, code in pieces():
        target = copy / path
        if how == "a new file":
            assert not target.exists(), f"{path} exists already: the guide says it is new"
            target.write_text(code)
        else:
            before = target.read_text()
            if path.endswith(".py"):  # after two blank lines, as PEP 8 separates top-level definitions
                before = before.rstrip("\n") + "\n\n\n"
            target.write_text(before + code)
    build = run([sys.executable, "-c", BUILD, "--root", str(copy)], copy)
    return copy, build


def test_the_guide_has_the_three_pieces():
    """The reference body, one check file and one handout section: nothing else to write by hand."""
    assert [(path, how) for path, how, _ in pieces()] == [
        ("reference/attention.py", "appended at the end"),
        ("autograder/checks/check_6_window.py", "a new file"),
        ("docs/handout.md", "appended at the end"),
    ]
    assert RIGHT_LINE in pieces()[0][2]


def test_the_copy_imports_its_own_code(extended):
    """The build and the gradings below run the copy's autograder and reference, not this checkout's."""
    copy, _ = extended
    found = run(
        [sys.executable, "-c", "import autograder, reference; print(autograder.__file__, reference.__file__)"], copy
    )
    assert found.stdout.split() == [str(copy / "autograder" / "__init__.py"), str(copy / "reference" / "__init__.py")]


def test_the_build_derives_everything_else(extended):
    """sdpa-build passes; the template, the notebook and the handout show the new stub; and no file but the three
    pieces and the files sdpa-build writes changed."""
    copy, build = extended
    assert build.returncode == 0, build.stderr
    check = run([sys.executable, "-c", BUILD, "--root", str(copy), "--check"], copy)
    assert check.returncode == 0, check.stdout + check.stderr
    template = (copy / "student_template" / "attention.py").read_text()
    assert f"def {FUNCTION}(" in template
    assert f"raise NotImplementedError('{FUNCTION} is not implemented yet')" in template
    assert "torch.tril(allowed, diagonal=-window)" not in template  # the solution does not leak
    assert "## Sliding windows" in (copy / "student_template" / "handout.md").read_text()
    cells = json.loads((copy / "assignments" / "source" / "sdpa" / "sdpa.ipynb").read_text())["cells"]
    sources = ["".join(cell["source"]) for cell in cells]
    stub = next(i for i, text in enumerate(sources) if text.startswith(f"def {FUNCTION}("))
    assert sources[stub - 2].startswith("## Sliding windows")  # the handout section, then the cell's heading
    assert any(text.startswith(f"# Hidden check {CHECK} (2 points)") for text in sources[stub:])
    conftest = (copy / "student_template" / "conftest.py").read_text()
    assert f'    "{FUNCTION}",\n    "{BUILT}",\n]' in conftest  # last in the order "Next:" follows
    changed = set(git(copy, "status", "--porcelain", "--untracked-files=all").split("\n")) - {""}
    changed = {line[3:] for line in changed}
    pieces_ = {path for path, _, _ in pieces()}
    generated = set(
        run(
            [sys.executable, "-c", "from autograder.release.build import targets; print(*targets(), sep='\\n')"], copy
        ).stdout.split()
    )
    assert pieces_ <= changed
    assert changed - pieces_ <= generated, (
        f"edited besides the pieces and the generated files: {changed - pieces_ - generated}"
    )


def test_a_student_is_sent_to_the_new_function(extended, tmp_path):
    """With every other function written and the new one still a stub, the public tests pass and the student's
    conftest names the new function next (no public test covers it: it is found as a stub in attention.py)."""
    copy, _ = extended
    for name in ("conftest.py", "pytest.ini", "test_attention.py"):
        shutil.copy2(copy / "student_template" / name, tmp_path / name)
    reference = (copy / "reference" / "attention.py").read_text()
    start = reference.index(f"def {FUNCTION}(")
    (tmp_path / "attention.py").write_text(reference[:start] + stub_source(reference[start:]))
    result = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], tmp_path)
    assert result.returncode == 0, result.stdout
    assert f"Next: implement {FUNCTION} in attention.py (2 function(s) still to write)" in result.stdout


def grade(root, source: str, name: str, folder=None, seed: int | None = None) -> dict:
    """results.json of ``source`` graded by ``root``'s grader (in ``folder``, or the copy's graded/NAME; with
    ``--seed seed`` where one is given)."""
    submission = (folder or root / "graded" / name) / "attention.py"
    submission.parent.mkdir(parents=True, exist_ok=True)
    submission.write_text(source)
    out = submission.with_name("results.json")
    seeded = [] if seed is None else ["--seed", str(seed)]
    result = run([sys.executable, "-c", GRADE, "grade", str(submission), *seeded, "--json", str(out)], root)
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(out.read_text())


@pytest.mark.slow
def test_the_reference_scores_the_old_total_plus_the_new_points_and_a_wrong_body_loses_only_the_new_check(
    extended, tmp_path
):
    """Graded in the copy: the reference earns every point, the new check's 2 included; the body that ignores the
    window loses exactly the new check."""
    copy, build = extended
    assert build.returncode == 0, build.stderr
    before = grade(ROOT, (ROOT / "reference" / "attention.py").read_text(), "", tmp_path)
    reference = (copy / "reference" / "attention.py").read_text()
    right = grade(copy, reference, "right")
    checks = {test["name"].split(": ")[-1]: test for test in right["tests"]}  # "function: check"
    assert before["score"] == before["max_score"] - quiz_points()  # an attention.py: no knowledge check
    added = new_points()
    assert right["score"] == right["max_score"] - quiz_points() == before["score"] + sum(added.values())
    assert checks[CHECK]["score"] == checks[CHECK]["max_score"] == added[CHECK]
    assert FUNCTION in checks[CHECK]["tags"]
    wrong = grade(copy, reference.replace(RIGHT_LINE, WRONG_LINE), "wrong")
    lost = {test["name"].split(": ")[-1] for test in checks_of(wrong) if test["score"] < test["max_score"]}
    assert lost == {CHECK}  # windowed_attention, built on the mask, keeps its points: carried forward
    assert wrong["score"] == right["score"] - added[CHECK]


def new_points() -> dict[str, int]:
    """check -> points, as the guide's check file declares them."""
    code = next(code for path, how, code in pieces() if how == "a new file")
    return {name: int(points) for points, name in re.findall(r"points=(\d+).*?\ndef test_(\w+)\(", code, re.S)}


@pytest.mark.slow
def test_a_function_built_on_the_attention_is_charged_an_attention_mistake_once(extended):
    """The guide's windowed_attention calls the student's scaled_dot_product_attention; its check file holds no
    evidence code. A scale bug (divide by d_k) costs scale_scores' check once: windowed_values, run again with the
    attention answered by the reference, passes and keeps its points. Seen failing with the substituted run turned
    off (windowed_values lost its points too). Graded with seed 1, which drew a window of one key while the guide's
    check drew windows from 1: each query then sees itself alone, whatever the scale, and windowed_values passed
    outright, carrying nothing (seen failing on 5 of seeds 0-13; none with windows from 2)."""
    copy, build = extended
    assert build.returncode == 0, build.stderr
    reference = (copy / "reference" / "attention.py").read_text()
    wrong = reference.replace("return scores / math.sqrt(d_k)", "return scores / d_k")
    assert wrong != reference
    tests = {test["name"].split(": ")[-1]: test for test in checks_of(grade(copy, wrong, "scale", seed=1))}
    lost = {check for check, test in tests.items() if test["score"] < test["max_score"]}
    assert lost == {"scale_values"}
    assert tests[BUILT_CHECK]["extra_data"]["carried"] == ["scaled_dot_product_attention"]
    assert "fix scaled_dot_product_attention first" in tests[BUILT_CHECK]["output"]


def test_the_helpers_a_check_uses_show_themselves_in_their_docstrings():
    """The guide points a TA at the comparison helpers' and the draw's docstring examples: they run as written."""
    from autograder.checks import cases, expect

    for module in (expect, cases):
        found = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert found.attempted >= 3 and found.failed == 0, module.__name__
