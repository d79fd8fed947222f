"""Honest code is never refused, flagged or charged (SPEC invariant 13): idioms real student code uses, each appended
to the reference solution (tests/submissions/honest/), keep the reference's full marks with no flag.

A dataclass (frozen, slots, default factories), typing under the reference's ``from __future__ import annotations``
(NamedTuple, TypedDict, ``Optional["Tensor"]``, ``Callable[..., "Tensor"]``, ``TypeVar(bound=...)``, ``Annotated``,
``typing.get_type_hints``), ``torch.utils.checkpoint``, ``torch.func.grad`` and an optimizer's ``zero_grad`` (whose
first call imports ``torch._dynamo``), ``@torch.jit.script`` and ``@torch.compile``, enum, abc, Protocol, logging,
warnings and functools; a docstring, a comment or ``__all__`` naming ``F.scaled_dot_product_attention``, and an
``if __name__ == "__main__":`` self-check against it. A name built at run time (``getattr(self, name)`` over the
projections' names) keeps its points and is shown for review. A chunked attention in the style of Stable Diffusion
front ends (tests/submissions/honest_blockwise/: a NamedTuple per chunk, each under checkpoint) keeps the optional
blockwise part's full marks. Graded as a .py with one zygote, the worker root and unprivileged, and as a notebook's
last cell through ``sdpa-grade batch``.
"""

from __future__ import annotations

import json
import sysconfig
from pathlib import Path

import nbformat
import pytest

from autograder.sandbox.processes import readable_by_others
from tests.attacks import POINTS, checks_of, overlaid
from tests.graded import Sandboxed, worker_of
from tests.helpers import BIN, FAST_LIMITS, REFERENCE, ROOT, SUBMISSIONS, checks_part, quiz_points, run, total

HONEST = SUBMISSIONS / "honest"
IDIOMS = sorted(path.stem for path in HONEST.glob("*.py"))
# real chunked attention that uses them, for the optional blockwise part (a NamedTuple per chunk, checkpoint)
PORTS = SUBMISSIONS / "honest_blockwise"
BLOCKWISE = sorted(path.stem for path in PORTS.glob("*.py"))
PART_ON = (ROOT / "tests" / "blockwise_on.toml").read_text()
# a name built at run time: the check keeps its points, the flag says "for review"
REVIEWED = {"getattr_projections": "names_built"}
# their first call imports torch._dynamo, which imports standard modules no grading needed before (cProfile): an
# unprivileged worker reads them only where Python's standard library is open to other users
LAZY_STDLIB = {"checkpoint_mha", "func_grad_variance", "optimizer_zero_grad"}
STDLIB = Path(sysconfig.get_paths()["stdlib"])


def _flags(result: dict) -> set[str]:
    return {test.get("extra_data", {}).get("flag", "") for test in result["tests"]} - {""}


# every idiom and port graded, the worker root or unprivileged, the blockwise part on, in three parts of six with a
# zygote each (the graded fixture: all 18 with one zygote took 89 s in each mode)
GRADED = Sandboxed(
    lambda base: (
        [overlaid(base, name, HONEST) for name in IDIOMS] + [overlaid(base, name, PORTS) for name in BLOCKWISE]
    ),
    limits=f"{FAST_LIMITS}\n{PART_ON}",
    parts=(tuple(IDIOMS[:6]), tuple(IDIOMS[6:12]), tuple(IDIOMS[12:] + BLOCKWISE)),
)


@pytest.mark.slow
@pytest.mark.timeout(120)
@GRADED.each(IDIOMS + BLOCKWISE)
def test_each_idiom_keeps_full_marks_with_no_flag(request, graded, name):
    """The reference with the idiom appended scores the reference's full total, the blockwise part's included; only
    a name built at run time is flagged, for review, with no points taken."""
    lazy = name in LAZY_STDLIB or name in BLOCKWISE
    if lazy and worker_of(request.node.callspec.params["graded"]) != "root" and not readable_by_others(STDLIB):
        pytest.skip(f"an unprivileged worker cannot read {STDLIB} (a folder above it is closed to others)")
    result = graded["results"][name]["result"]
    assert "grader_error" not in result, result.get("grader_error")
    lost = {check: test["output"] for check, test in checks_of(result).items() if test["score"] < test["max_score"]}
    assert lost == {}, lost
    full = sum(POINTS.values()) + total_of_part()
    assert checks_part(result) == (full, full) and result["max_score"] == full + quiz_points()  # no answers: a .py
    assert _flags(result) == ({REVIEWED[name]} if name in REVIEWED else set())


def total_of_part() -> float:
    """The blockwise part's points under its settings (the part's checks' markers, or the settings' overrides)."""
    from autograder.config import load_settings

    on = load_settings(ROOT / "tests" / "blockwise_on.toml", environ={})
    return sum(on.points.values()) - sum(load_settings(environ={}).points.values())


def _notebook_with(idiom: str) -> nbformat.NotebookNode:
    """The source notebook with its answers (markers dropped) and the idiom as one more code cell at its end."""
    notebook = nbformat.read(REFERENCE.parent.parent / "assignments" / "source" / "sdpa" / "sdpa.ipynb", as_version=4)
    for cell in notebook.cells:
        if cell.metadata.get("nbgrader", {}).get("solution"):
            cell.source = "\n".join(line for line in cell.source.splitlines() if "### " not in line)
    notebook.cells.append(nbformat.v4.new_code_cell(idiom))
    return notebook


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_every_idiom_in_a_notebook_keeps_full_marks(tmp_path):
    """The same idioms in a notebook's last cell, graded by sdpa-grade batch: each the notebook's full total, the
    same flags as the .py."""
    klass = tmp_path / "class"
    klass.mkdir()
    for name in IDIOMS:
        nbformat.write(_notebook_with((HONEST / f"{name}.py").read_text()), klass / f"{name}.ipynb")
    out = tmp_path / "grades"
    done = run([str(BIN / "sdpa-grade"), "batch", str(klass), "--json-dir", str(out), "--jobs", "2"], timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    for name in IDIOMS:
        result = json.loads(next(out.glob(f"{name}*.json")).read_text())
        lost = {test["name"]: test["output"] for test in result["tests"] if test["score"] < test["max_score"]}
        assert lost == {}, (name, lost)
        assert result["score"] == total(notebook=True), name
        assert _flags(result) == ({REVIEWED[name]} if name in REVIEWED else set()), name


SCRATCH = """q, k, v = (torch.randn(2, 3, 5, 4) for _ in range(3))
print((scaled_dot_product_attention(q, k, v)[0] - F.scaled_dot_product_attention(q, k, v)).abs().max())"""


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_scratch_cell_comparing_with_pytorch_costs_nothing(tmp_path):
    """A notebook cell at the top level that compares the student's attention with PyTorch's, as the public tests do:
    not the graded function (it runs once as the notebook loads, where the fused call is refused and the cell alone
    stops), so no finding: the notebook's full total, no flag (it cost integrity_sdpa and integrity_mha, 3 points)."""
    path = tmp_path / "sdpa.ipynb"
    nbformat.write(_notebook_with(SCRATCH), path)
    done = run([str(BIN / "sdpa-grade"), "grade", str(path), "--json", str(tmp_path / "r.json")], timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads((tmp_path / "r.json").read_text())
    lost = {test["name"]: test["output"] for test in result["tests"] if test["score"] < test["max_score"]}
    assert lost == {} and result["score"] == total(notebook=True) and _flags(result) == set(), lost
