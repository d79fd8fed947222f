"""Paths and small helpers shared by the project's tests."""

from __future__ import annotations

import base64
import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from html.parser import HTMLParser
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "reference" / "attention.py"
TEMPLATE_DIR = ROOT / "student_template"
SUBMISSIONS = Path(__file__).resolve().parent / "submissions"
BIN = Path(sys.executable).parent
# sdpa-build as `python -c BUILD` runs it: the tree on sys.path first (a copy's own, from its folder)
BUILD = "import sys; from autograder.cli import build; sys.exit(build())"
# a config file's [limits] for gradings that take seconds: short call and load limits, 2 GB of memory
FAST_LIMITS = "[limits]\ncall_timeout = 5.0\nload_timeout = 5.0\nafter_hang_timeout = 1.0\nmemory_mb = 2048\n"


def words_of(text: str) -> str:
    """Feedback with its numbers masked (sizes, errors, indices): each grading draws its own inputs, so where a result
    differs and by how much change from seed to seed; what was found and its likely cause must not."""
    return re.sub(r"-?\d+(\.\d+)?(e[-+]?\d+)?", "#", text)


def with_overlay(overlay: str | None) -> str:
    """The reference's source with ``tests/submissions/overlays/<overlay>.py`` appended after a newline (the
    reference's alone for None): a submission that differs from the reference by the overlay's definitions."""
    return REFERENCE.read_text() + (f"\n{(SUBMISSIONS / 'overlays' / f'{overlay}.py').read_text()}" if overlay else "")


def tracked_copy(folder: Path) -> Path:
    """``folder`` holding a copy of the project's tracked files, as they are in the working tree."""
    names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    for name in filter(None, names.split("\0")):
        if (ROOT / name).is_file():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, folder / name)
    return folder


def student_folder(tmp_path: Path, attention_source: str | None = None) -> Path:
    """A copy of student_template/ alone, optionally with attention.py replaced."""
    folder = tmp_path / "student"
    shutil.copytree(TEMPLATE_DIR, folder, ignore=shutil.ignore_patterns("__pycache__"))
    if attention_source is not None:
        (folder / "attention.py").write_text(attention_source)
    return folder


def run(args: list[str], cwd: Path | None = None, timeout: float = 120, **kwargs) -> subprocess.CompletedProcess:
    """Run a real command, capturing its text output."""
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout, **kwargs)


def said(argv: list[str], capsys) -> tuple[int, str, str]:
    """``sdpa-grade`` with these arguments, in this process, for what parsing alone decides: exit code, stdout,
    stderr."""
    import pytest

    from autograder.cli import main

    with pytest.raises(SystemExit) as stopped:
        main(argv)
    out, err = capsys.readouterr()
    return stopped.value.code, out, err


def limits(**changes) -> dict:
    """The default [limits] as the sandbox takes them (plain values), with ``changes``."""
    import dataclasses

    from autograder.config import load_settings

    return {**dataclasses.asdict(load_settings(environ={}).limits), **changes}


def csv_rows(path: Path) -> list[list[str]]:
    """A class CSV's rows less its graded_at column: when each student was graded differs from run to run; every
    other cell (scores, late fields, digests) may not."""
    with open(path, newline="") as handle:
        rows = list(csv.reader(handle))
    if not rows or "graded_at" not in rows[0]:
        return rows
    column = rows[0].index("graded_at")
    return [row[:column] + row[column + 1 :] for row in rows]


def points(check: str) -> float:
    """A hidden check's points under the default settings: its marker's, or the override in defaults.toml."""
    from autograder.config import load_settings

    return load_settings(environ={}).points[check]


def total(*, gpu: bool = False, notebook: bool = False) -> float:
    """The most a submission scores under the default settings: every hidden check's points, timing_gpu's only where
    it runs (without a GPU it is not run, worth 0 of 0 under ``when_no_gpu = "exclude"``; ``award`` counts it); with
    ``notebook``, a notebook's, its knowledge check's questions too."""
    from autograder.checks.quiz import POINTS, QUESTIONS
    from autograder.config import load_settings

    checks = sum(value for check, value in load_settings(environ={}).points.items() if gpu or check != "timing_gpu")
    return checks + (len(QUESTIONS) * POINTS if notebook else 0)


def quiz_points() -> float:
    """What the knowledge check is worth: in every result's maximum, counted 0 (not handed in) in an attention.py's."""
    from autograder.checks.quiz import POINTS, QUESTIONS

    return float(len(QUESTIONS) * POINTS)


def checks_of(result: dict) -> list[dict]:
    """A result's tests of the hidden checks alone: its knowledge check's questions left out (an attention.py's count
    0 of their points, not handed in)."""
    from autograder.checks.quiz import FUNCTION

    return [test for test in result["tests"] if test["tags"][0] != FUNCTION]


def checks_part(result: dict) -> tuple[float, float]:
    """A result's score and maximum over the hidden checks alone (its knowledge check's questions left out)."""
    checks = checks_of(result)
    return sum(test["score"] for test in checks), sum(test["max_score"] for test in checks)


def maximum(*, gpu: bool = False) -> float:
    """The assignment's one maximum under the default settings, that of every submission (a .py, a notebook, an
    ungradable one): the hidden checks' points (``total``) and the knowledge check's, counted as not handed in where
    no answer was read. A correct attention.py scores ``total()`` of it."""
    return total(gpu=gpu, notebook=True)


# nbgrader's commands, and a released notebook answered from the source

SOLUTION_MARKERS = re.compile(r"^\s*### (BEGIN|END) SOLUTION\s*$\n?", re.MULTILINE)


def nbgrader(*args, cwd, env):
    """Run one nbgrader command; it must succeed."""
    result = run([str(BIN / "nbgrader"), *args], cwd=cwd, env=env, timeout=120)
    assert result.returncode == 0, (
        f"nbgrader {' '.join(args)} failed:\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}"
    )
    return result


def nbgrader_course(base: Path) -> tuple[Path, dict[str, str]]:
    """``base``/course: a copy of assignments/ without what nbgrader makes, its assignment generated; and the
    environment nbgrader runs in there (the venv's commands on PATH, alembic among them)."""
    course = base / "course"
    shutil.copytree(
        ROOT / "assignments",
        course,
        ignore=shutil.ignore_patterns("release", "submitted", "autograded", "feedback", "exchange", "gradebook.db"),
    )
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}  # alembic must be on PATH
    nbgrader("generate_assignment", "sdpa", "--force", cwd=course, env=env)
    return course, env


def answered(release, source, overrides):
    """The released notebook with every solution cell filled in from the source, then ``overrides`` by grade id."""
    import nbformat

    solutions = {
        c.metadata["nbgrader"]["grade_id"]: c.source
        for c in source.cells
        if c.metadata.get("nbgrader", {}).get("solution")
    }
    notebook = nbformat.from_dict(json.loads(json.dumps(release)))
    for cell in notebook.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if cell.metadata.get("nbgrader", {}).get("solution"):
            cell.source = overrides.get(grade_id, SOLUTION_MARKERS.sub("", solutions[grade_id]))
    return notebook


# results records made by hand, and the checks of a page that the render tests apply

VOID = {"meta", "img", "br", "hr", "input", "link"}


PICTURE = {
    "example": "causal", "function": "causal_mask", "queries": 4, "keys": 6,
    "mask": [[j <= i for j in range(6)] for i in range(4)],
    "expected": [[round(1 / (i + 1), 3) if j <= i else 0.0 for j in range(6)] for i in range(4)],
    "got": [[round(1 / (6 - i), 3) if j >= i else 0.0 for j in range(6)] for i in range(3)] + [[None] * 6],
}  # fmt: skip


def check_result(
    check, function, category, score, worth, output="passed", mistake="", flag="", picture=None, seconds=0.01
):
    """One check's record in a results file, as the grader writes it."""
    from autograder.render.text import block_grid

    data = {
        "check": check,
        "outcome": "passed" if score == worth else "failed",
        "mistake": mistake,
        "seconds": seconds,
        "flag": flag,
    }
    if picture:
        data["picture"] = picture
        output = f"{output}\n{block_grid(picture)}"
    return {
        "name": f"{function}: {check}",
        "score": score,
        "max_score": worth,
        "output": output,
        "visibility": "visible",
        "tags": [function, category],
        "extra_data": data,
    }


def result(tests, seconds=3.0, **extra):
    """A results file of ``tests``, its score and maximum their sums."""
    return {
        "score": sum(t["score"] for t in tests),
        "max_score": sum(t["max_score"] for t in tests),
        "execution_time": seconds,
        "output": "Graded by the hidden checks.",
        "tests": tests,
        **extra,
    }


def a_class() -> dict[str, dict]:
    """A class of four: full marks, a flipped causal mask (with its picture), a flag, an empty file."""
    flipped = "causal_mask(5): 10 of 25 entries differ. Likely cause: the causal triangle is flipped"
    return {
        "alice": result(
            [
                check_result("causal_square", "causal_mask", "causal", 1, 1),
                check_result("integrity_sdpa", "sdpa", "integrity", 2, 2),
            ]
        ),
        "bob <b>": result(
            [
                check_result(
                    "causal_square", "causal_mask", "causal", 0, 1, flipped, "causal_flipped", picture=PICTURE
                ),
                check_result("integrity_sdpa", "sdpa", "integrity", 0, 2, "no points: fix those first"),
            ],
            seconds=9.5,
        ),  # fmt: skip
        "carol": result(
            [
                check_result("causal_square", "causal_mask", "causal", 1, 1),
                check_result(
                    "integrity_sdpa", "sdpa", "integrity", 0, 2, "sdpa ran PyTorch's fused attention", flag="integrity"
                ),
            ]
        ),  # fmt: skip
        "dave": result([], seconds=0.5, ungradable="attention.py is empty"),
    }


class Checked(HTMLParser):
    """Parses a page, checking that every element is closed in order, and collects images, links and rows."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.open: list[str] = []
        self.images: list[str] = []
        self.links: list[str] = []
        self.attributes: list[dict] = []
        self.text: list[str] = []
        self.scripts_from: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.attributes.append(attrs)
        if tag == "img":
            self.images.append(attrs.get("src", ""))
        if tag == "a":
            self.links.append(attrs.get("href", ""))
        if tag in ("script", "link") and (attrs.get("src") or attrs.get("href")):
            self.scripts_from.append(attrs.get("src") or attrs.get("href"))
        if tag not in VOID:
            self.open.append(tag)

    def handle_endtag(self, tag):
        assert self.open and self.open[-1] == tag, f"</{tag}> closes <{self.open[-1] if self.open else None}>"
        self.open.pop()

    def handle_data(self, data):
        self.text.append(data)


def parsed(page: str) -> Checked:
    """A page parsed: a document, every element closed in order, nothing fetched."""
    assert page.startswith("<!DOCTYPE html>")
    checker = Checked()
    checker.feed(page)
    checker.close()
    assert checker.open == [], f"unclosed: {checker.open}"
    assert not checker.scripts_from, "the page fetches something"
    return checker


def decoded(src: str):
    """An embedded image's pixels: it must be a PNG data URI that decodes."""
    from matplotlib import image as matplotlib_image

    prefix = "data:image/png;base64,"
    assert src.startswith(prefix), src[:40]
    data = base64.b64decode(src[len(prefix) :], validate=True)
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    pixels = matplotlib_image.imread(io.BytesIO(data), format="png")
    assert pixels.shape[0] > 50 and pixels.shape[1] > 50
    assert float(pixels.std()) > 0.01  # not one flat colour
    return pixels


# the Gradescope bundle, unpacked and set up as Gradescope does

SETUP_TIMEOUT = 120


def clean_env(**extra: str) -> dict[str, str]:
    """The environment a fresh machine would have: no project venv on PATH, no Python overrides."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PYTHONSAFEPATH") and not key.startswith("SDPA_")
    }
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p and Path(p) != BIN)
    return {**env, **extra}


def unpack(bundle: Path, folder: Path) -> Path:
    """The bundle unpacked into ``folder``/autograder/source, as Gradescope does; returns the fake /autograder."""
    root = folder / "autograder"
    source = root / "source"
    source.mkdir(parents=True)
    with zipfile.ZipFile(bundle) as archive:
        archive.extractall(source)
    for name in ("setup.sh", "run_autograder"):
        (source / name).chmod(0o755)  # zipfile does not restore modes; Gradescope does
    return root


def setup(root: Path, **env: str) -> subprocess.CompletedProcess:
    """Run the bundle's setup.sh, with the machine's own pip configuration, as Gradescope runs it."""
    started = time.perf_counter()
    result = run(
        [shutil.which("bash"), str(root / "source" / "setup.sh")],
        cwd=root / "source",
        timeout=SETUP_TIMEOUT,
        env=clean_env(AUTOGRADER_ROOT=str(root), **env),
    )
    print(f"setup.sh took {time.perf_counter() - started:.0f} s")
    return result


# a class folder of submissions, and what a batch's results say of each student

CLASS = {  # student -> submission: honest, wrong, hostile and ungradable ones
    "ada": "correct",
    "bo": "correct",
    "chen": "mistake_divide_by_dk",
    "dev": "mistake_no_scale",
    "eun": "mistake_mask_inverted",
    "femi": "fake_results",
    "gus": "syntax_error",
    "hana": "correct",
}


def write_class(folder, klass: dict[str, str] = CLASS):
    """A class folder: one subfolder per student of ``klass`` (student -> submission), holding attention.py."""
    folder.mkdir()
    for student, name in klass.items():
        (folder / student).mkdir()
        overlay = SUBMISSIONS / "overlays" / f"{name}.py"
        text = (
            REFERENCE.read_text() + ("\n" + overlay.read_text() if overlay.is_file() else "")
            if name == "correct" or overlay.is_file()
            else (SUBMISSIONS / "standalone" / f"{name}.py").read_text()
        )
        (folder / student / "attention.py").write_text(text)
    return folder


def outcomes(out) -> dict[str, tuple]:
    """Per student: the total, and every check's score out of its maximum (not timings: each run has its own seed)."""
    found = {}
    for path in sorted(out.glob("*.json")):
        result = json.loads(path.read_text())
        checks = tuple(sorted((t["name"], t["score"], t["max_score"]) for t in result["tests"]))
        found[path.stem] = (result["score"], result.get("ungradable", ""), checks)
    return found


# the modules a file imports, read from its source


def imports(path: Path) -> set[str]:
    """Every module ``path`` imports, at any depth (imports inside functions included)."""
    import ast

    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def ours(path: Path) -> set[str]:
    """The project's own modules ``path`` imports (the autograder's and the reference's)."""
    return {name for name in imports(path) if name.split(".")[0] in ("autograder", "reference")}


def sources_only(folder):
    """A project folder holding only what the build reads: the reference, the handout and its plot, the public tests
    and their conftest, docs/grading.md (whose table of the checks it writes), pyproject.toml (the torch range) and the
    default settings (their comments)."""
    for path in (
        REFERENCE,
        ROOT / "docs" / "handout.md",
        ROOT / "docs" / "saturation.svg",
        ROOT / "docs" / "grading.md",  # its table of the checks
        TEMPLATE_DIR / "test_attention.py",
        TEMPLATE_DIR / "conftest.py",  # its order of the functions and what each builds on
        ROOT / "pyproject.toml",
        ROOT / "autograder" / "defaults.toml",
    ):
        target = folder / path.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, target)
    return folder


def python_steps(function, text) -> int:
    """How many Python bytecodes ``function(text)`` executes, its callees' included (``sys.settrace`` with opcode
    events): a count of the work the reader's Python does, the same on a quiet machine and a loaded one. What C
    does inside one call (a regular expression's scan) counts as the call's own bytecodes: the readers' patterns are
    single characters or classes that cannot backtrack (STYLE.md, 19)."""
    count = 0

    def trace(frame, event, arg):
        nonlocal count
        frame.f_trace_opcodes = True
        if event == "opcode":
            count += 1
        return trace

    previous = sys.gettrace()
    sys.settrace(trace)
    try:
        function(text)
    finally:
        sys.settrace(previous)
    return count
