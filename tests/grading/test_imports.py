"""What a submission may import: the settings' [imports] allowed and the standard library, on every path alike,
whatever else the grading machine has installed (the project's venv has matplotlib and pytest; Gradescope's has not)."""

from __future__ import annotations

import importlib.metadata
import json
import sysconfig
from pathlib import Path

import pytest
import torch

from autograder.checks.loading import explain
from autograder.config import ConfigError, load_settings
from autograder.sandbox.client import Sandbox
from autograder.sandbox.readable import NotInstalled, exposed
from autograder.sandbox.zygote import Zygote
from tests.helpers import BIN, REFERENCE, limits, quiz_points, run

SITE = Path(sysconfig.get_paths()["purelib"])
LIST = "a submission may import only Python's standard library, torch and numpy"
# what the probe tries, in order: an allowed package, the stdlib, one the project's venv has but the list lacks,
# pytest (beside the grader everywhere), the same by importlib, and sympy, which torch itself needs
TRIED = ("numpy", "json", "matplotlib", "pytest", "importlib matplotlib", "importlib sympy")
PROBE = """
import importlib
import torch

def attention_scores(Q, K):
    found = []
    for name in ("numpy", "json", "matplotlib", "pytest"):
        try:
            __import__(name)
            found.append(True)
        except ImportError:
            found.append(False)
    for name in ("matplotlib", "sympy"):
        try:
            importlib.import_module(name)
            found.append(True)
        except ImportError:
            found.append(False)
    return torch.tensor(found)

def scale_scores(scores, d_k):
    try:
        open(MATPLOTLIB).close()
    except OSError:  # refused (Landlock), or not there at all (an install under /tmp, which is the sandbox's own)
        return torch.tensor(0)
    return torch.tensor(1)
"""


def with_import(line: str) -> str:
    """The reference with ``line`` among its imports, at the top of the file."""
    return REFERENCE.read_text().replace("import math\n", f"import math\n{line}\n", 1)


def probe(tmp_path: Path, zygote: Zygote, imports, block_fused: bool = True) -> tuple[dict[str, bool], bool, bool]:
    """What the probe could import in a sandbox given ``imports``, whether it could read matplotlib's files, and
    whether Landlock held there."""
    import matplotlib

    path = tmp_path / "attention.py"
    path.write_text(PROBE.replace("MATPLOTLIB", repr(str(Path(matplotlib.__file__).resolve()))))
    with Sandbox(path, limits(load_timeout=30), zygote=zygote, imports=imports, block_fused=block_fused) as box:
        assert box.load().ok, box.load_reply
        found = box.call("attention_scores", (torch.zeros(1), torch.zeros(1)), timeout=30).value.tolist()
        readable = box.call("scale_scores", (torch.zeros(1), 4), timeout=30).value.item()
        landlock = not box.confinement.get("landlock", "missing").startswith("missing")
    return dict(zip(TRIED, found)), bool(readable), landlock


@pytest.mark.timeout(120)
def test_the_sandbox_lets_a_submission_import_what_the_settings_allow(tmp_path):
    """Allowed and stdlib modules import; matplotlib and pytest (installed here) fail as missing modules, by an import
    statement or by importlib, and matplotlib's files cannot be read; torch's own dependencies stay (sympy).
    Listed, matplotlib imports; without a list (the reference's sandbox) everything installed does."""
    with Zygote() as zygote:
        default, read, landlock = probe(tmp_path, zygote, ["torch", "numpy"])
        assert default == dict(zip(TRIED, (True, True, False, False, False, True)))
        assert not (read and landlock)  # where Landlock holds, matplotlib's files cannot even be read
        listed, read, _ = probe(tmp_path, zygote, ["torch", "numpy", "matplotlib"])
        assert listed == dict(zip(TRIED, (True, True, True, False, True, True))) and read
        unlisted, _, _ = probe(tmp_path, zygote, None, block_fused=False)  # as the reference's sandbox is
        assert all(unlisted.values()), unlisted


def test_what_the_sandbox_exposes_is_the_allowed_packages_and_what_they_need():
    """torch with its requirements (sympy, not an extra's), numpy; matplotlib only once listed, with pillow (PIL)."""
    default = exposed(SITE, ["torch", "numpy"])
    assert {"torch", "numpy", "sympy"} <= default and not {"matplotlib", "PIL", "_pytest", "pytest"} & default
    assert {"matplotlib", "PIL", "mpl_toolkits"} <= exposed(SITE, ["torch", "numpy", "matplotlib"])


def _exposed_as_importlib_has_it(allowed: list[str]) -> set[str]:
    """``exposed`` the slow way: every distribution's files and requirements as importlib.metadata reads them."""
    import re

    def canonical(name: str) -> str:
        return re.sub(r"[-_.]+", "-", name).lower()

    owners: dict[str, set[str]] = {}
    requires: dict[str, set[str]] = {}
    for dist in importlib.metadata.distributions(path=[str(SITE)]):
        name = canonical(dist.metadata["Name"] or "")
        owners.setdefault(name, set()).update(f.parts[0] for f in dist.files or () if f.parts)
        for requirement in dist.requires or ():
            needed, _, marker = requirement.partition(";")
            if "extra" not in marker:
                requires.setdefault(name, set()).add(canonical(re.match(r"[A-Za-z0-9._-]+", needed.strip()).group()))
    wanted = {"torch", *allowed}
    todo = [name for name, tops in owners.items() if any(top.split(".")[0] in wanted for top in tops)]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo += [needed for needed in requires.get(name, ()) if needed in owners]
    return {top for name in seen for top in owners[name]} & {entry.name for entry in SITE.iterdir()}


@pytest.mark.parametrize("allowed", [["torch"], ["torch", "numpy"], ["torch", "numpy", "matplotlib"], ["torch", "PIL"]])
def test_what_the_sandbox_exposes_is_what_importlib_reads_of_every_distribution(allowed):
    """``exposed`` reads in full only the distributions whose RECORD names a wanted module, and what they require;
    the same entries as reading every installed distribution with importlib.metadata."""
    assert exposed(SITE, allowed) == _exposed_as_importlib_has_it(allowed) - {"..", "__pycache__"}


def test_an_allowed_module_that_is_not_installed_is_the_graders_error():
    """Grading where a listed module is missing would score otherwise than where it is there: refused, naming it."""
    with pytest.raises(NotInstalled, match=r"\[imports\] allowed names no_such_module, which is not installed here"):
        exposed(SITE, ["torch", "no_such_module"])


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ('["numpy"]', "must include torch"),
        ('"torch"', "expected a list of top-level module names"),
        ('["torch", "not-a-name"]', "expected a list of top-level module names"),
    ],
)
def test_the_import_list_is_validated(tmp_path, value, problem):
    """A list without torch, a word instead of a list, a name no import could use: refused, naming the file."""
    path = tmp_path / "course.toml"
    path.write_text(f"[imports]\nallowed = {value}\n")
    with pytest.raises(ConfigError, match=rf"Invalid imports.allowed .* from {path} \(--config\): {problem}"):
        load_settings(path, environ={})


def test_a_refused_import_names_the_students_line_and_the_list():
    """The load failure's sentence: the line, what it imports, the list from the settings; a misspelt submodule of an
    allowed package is not blamed on the list."""
    source = "import math\nimport matplotlib.pyplot as plt\nimport torch.nonexistent\n"
    refused = explain(
        "ModuleNotFoundError", "No module named 'matplotlib' (attention.py, line 2)", source, allowed=("torch", "numpy")
    )
    assert refused == (
        "attention.py could not be loaded: line 2 (`import matplotlib.pyplot as plt`) imports matplotlib; "
        f"{LIST} (the course's settings, [imports] allowed), and only attention.py is graded: remove that import"
    )
    missing = explain(
        "ModuleNotFoundError", "No module named 'torch.nonexistent' (attention.py, line 3)", source, allowed=("torch",)
    )
    assert missing.endswith(
        "line 3 (`import torch.nonexistent`) imports torch.nonexistent, which does not exist: check its name"
    )


def grade(path: Path, *options: str) -> dict:
    result = run(
        [str(BIN / "sdpa-grade"), "grade", str(path), "--json", str(path.with_suffix(".json")), *options], timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(path.with_suffix(".json").read_text())


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_matplotlib_at_the_top_is_refused_unless_listed(tmp_path):
    """`import matplotlib.pyplot as plt` at the top of a correct file, graded by sdpa-grade where matplotlib is
    installed: 0, the first check saying the line and the list (as on Gradescope, where it is not installed); with
    matplotlib in [imports] allowed, full marks. numpy is on the default list; off the list, it is refused too."""
    path = tmp_path / "attention.py"
    path.write_text(with_import("import matplotlib.pyplot as plt"))
    refused = grade(path)
    assert refused["score"] == 0, refused["tests"][0]
    assert refused["tests"][0]["output"].startswith(
        "attention.py could not be loaded: line 18 (`import matplotlib.pyplot as plt`) imports matplotlib.pyplot; "
        f"{LIST} (the course's settings, [imports] allowed)"
    )
    course = tmp_path / "course.toml"
    course.write_text('[imports]\nallowed = ["torch", "numpy", "matplotlib"]\n')
    listed = grade(path, "--config", str(course))
    assert listed["score"] == listed["max_score"] - quiz_points() and listed["max_score"] == refused["max_score"] > 0
    path.write_text(with_import("import numpy as np"))
    numpy = grade(path)
    assert numpy["score"] == numpy["max_score"] - quiz_points() > 0
    course.write_text('[imports]\nallowed = ["torch"]\n')
    only_torch = grade(path, "--config", str(course))
    assert only_torch["score"] == 0
    assert (
        "imports numpy; a submission may import only Python's standard library and torch ("
        in (only_torch["tests"][0]["output"])
    )


def _as_importlib_has_it(dist) -> tuple:
    tops = {file.parts[0] for file in dist.files or () if file.parts}
    return tops, dist.metadata["Name"], dist.requires


def test_the_quick_reading_of_distributions_is_importlibs(tmp_path):
    """Each distribution's top-level entries, name and requirements, read quickly (RECORD's lines, the metadata's
    headers alone: 0.35 against 1.4 CPU-s a cold grading), are what importlib.metadata makes of them, for every
    distribution installed here and for one with odd lines (absolute, ``./``, quoted, CRLF, ``.``, empty, without a
    comma)."""
    from autograder.sandbox.readable import _headers, _name, _tops

    info = tmp_path / "odd-1.0.dist-info"
    info.mkdir()
    (info / "RECORD").write_text(
        'odd/__init__.py,,\r\n./dot/x.py,,\n/abs/y.py,,\n"com,ma/z.py",,\n../../bin/odd,,\n.,,\n,,\nno-comma\n'
    )
    (info / "METADATA").write_bytes(
        b"Metadata-Version: 2.1\r\nName: odd\r\nRequires-Dist: numpy\r\n\r\nRequires-Dist: in-the-body\r\n"
    )
    for dist in [
        *importlib.metadata.distributions(path=[str(SITE)]),
        *importlib.metadata.distributions(path=[str(tmp_path)]),
    ]:
        headers = _headers(dist)
        quick = (_tops(dist), headers["Name"], headers.get_all("Requires-Dist") or dist.requires)
        assert quick == _as_importlib_has_it(dist), dist.metadata["Name"]
        assert _name(dist) == (dist.metadata["Name"] or ""), dist.metadata["Name"]
