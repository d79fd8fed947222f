"""Build the nbgrader source notebook from the reference, the handout and the public tests.

Cells, in order: the handout's introduction; a set-up cell (imports and the public tests'
helper); then for each function the handout sections that teach it, the function with
nbgrader's solution markers, its public tests (a visible test cell worth 0 points) and one
graded cell per hidden check; finally the knowledge check. A hidden check's cell and a question's
check cell hold only a comment: no code, no answer. ``nbgrader autograde`` writes their verdicts
into them from a grading outside the student's reach (autograder/nbgrader_path/autograde.py). Written with
nbformat, so nbgrader's schema is respected.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from autograder.assignment.catalogue import catalogue
from autograder.assignment.parts import handout_without, teaches, without
from autograder.assignment.paths import NOTEBOOK
from autograder.checks.quiz import POINTS, QUESTIONS
from autograder.config import Settings, load_settings

PLOT = NOTEBOOK.with_name("saturation.svg")  # the handout links it; nbgrader releases it beside the notebook
HANDOUT = Path("docs/handout.md")
PUBLIC_TESTS = Path("student_template/test_attention.py")
# checks that cannot agree with sdpa-grade on a grading machine without a GPU are left out of the notebook
NOT_IN_NOTEBOOK = {"timing_gpu"}
GRADED_OUTSIDE = (
    "# The autograder grades it outside this notebook and shows its verdict here when you get your feedback."
)


def _meta(
    grade_id: str, *, solution: bool = False, grade: bool = False, points: float | None = None, locked: bool = False
):
    nbgrader = {
        "grade": grade,
        "grade_id": grade_id,
        "locked": locked,
        "schema_version": 3,
        "solution": solution,
        "task": False,
    }
    if grade:
        nbgrader["points"] = points
    return {"nbgrader": nbgrader}


def _points(value: float) -> str:
    return f"{value:g} point" if value == 1 else f"{value:g} points"


def _sections(text: str) -> tuple[str, dict[str, str], dict[str, list[str]]]:
    """The handout's title block, each '## ' section by its heading (its marker line left out), and the headings
    of each function's sections, in the handout's order: a section that teaches a function says so on the line
    under its heading, ``<!-- function: NAME -->``, and goes into the notebook above that function's stub."""
    head, *rest = text.split("\n## ")
    sections: dict[str, str] = {}
    taught: dict[str, list[str]] = {}
    for block in rest:
        heading, _, body = block.partition("\n")
        heading = heading.strip()
        function = teaches(block)
        if function is not None:
            taught.setdefault(function, []).append(heading)
            body = body.partition("\n")[2]
        sections[heading] = f"## {heading}\n{body}".strip() + "\n"
    return head.strip() + "\n", sections, taught


def _definitions(source: str) -> tuple[str, list[tuple[str, str]]]:
    """The reference's imports, and each top-level function or class with its source (markers included)."""
    tree = ast.parse(source)
    lines = source.splitlines()
    first = next(node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef)))
    imports = [
        ast.get_source_segment(source, node)
        for node in tree.body[: tree.body.index(first)]
        if isinstance(node, (ast.Import, ast.ImportFrom))
    ]
    definitions = []
    for index, node in enumerate(tree.body):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            start = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1
            # up to the next statement: the closing "### END SOLUTION" comment lies past the last line ast knows
            end = tree.body[index + 1].lineno - 1 if index + 1 < len(tree.body) else len(lines)
            definitions.append((node.name, "\n".join(lines[start:end]).rstrip()))
    return "\n".join(i for i in imports if "__future__" not in i), definitions


def _hints_outside(code: str) -> str:
    """Move each region's ``# HINT:`` line above its BEGIN marker, so that it survives nbgrader's stub."""
    lines = code.splitlines()
    for index in range(len(lines) - 1):
        if lines[index].strip() == "### BEGIN SOLUTION" and lines[index + 1].strip().startswith("# HINT:"):
            lines[index], lines[index + 1] = lines[index + 1].replace("# HINT:", "# Hint:", 1), lines[index]
    return "\n".join(lines)


def _public_tests(source: str, names: list[str]) -> tuple[str, dict[str, list[str]]]:
    """The public tests' helpers, and each test (as source) under the function it tests."""
    tree = ast.parse(source)
    helpers, tests = [], {name: [] for name in names}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            owner = max((n for n in names if n in node.name), key=len, default=None)
            if owner is None:
                raise ValueError(f"{node.name} in {PUBLIC_TESTS} names none of the functions ({', '.join(names)})")
            tests[owner].append(ast.get_source_segment(source, node) + f"\n\n\n{node.name}()")
        elif isinstance(node, ast.FunctionDef):
            helpers.append(ast.get_source_segment(source, node))
    return "\n\n\n".join(helpers), tests


def build_notebook(root: Path, settings: Settings | None = None) -> str:
    """The nbgrader source notebook, with the parts ``settings`` turn on (the default settings' without them). Its
    cells are worth the default settings' points, each check of a part its marker's: a course's own [points] go on
    the cells by hand (docs/instructor.md), so that building with a course's file never changes them unseen."""
    defaults = load_settings(environ={})
    off = (settings or defaults).parts.off()
    reference = without((root / "reference" / "attention.py").read_text(), off)
    imports, definitions = _definitions(reference)
    names = [name for name, _ in definitions]
    title, sections, section_of = _sections(handout_without((root / HANDOUT).read_text(), off))
    helpers, tests = _public_tests((root / PUBLIC_TESTS).read_text(), names)
    points = {entry.check: defaults.points.get(entry.check, entry.points) for entry in catalogue()}
    taught = {heading for headings in section_of.values() for heading in headings}

    cells = [new_markdown_cell(title)]
    cells += [new_markdown_cell(text) for heading, text in sections.items() if heading not in taught]
    setup = f"{imports}\nimport torch.nn.functional as F\n\n\n{helpers}"
    cells.append(new_code_cell(setup, metadata=_meta("setup", locked=True)))
    for name, code in definitions:
        cells += [new_markdown_cell(sections[heading]) for heading in section_of.get(name, [])]
        cells.append(
            new_markdown_cell(f"### `{name}`\n\nFill in the code below, then run the cell and the tests after it.")
        )
        cells.append(new_code_cell(_hints_outside(code), metadata=_meta(name, solution=True)))
        if tests[name]:
            visible = "# Public tests: small examples you can check by hand.\n\n" + "\n\n\n".join(tests[name])
            cells.append(new_code_cell(visible, metadata=_meta(f"public_{name}", grade=True, points=0, locked=True)))
        for entry in catalogue():
            if entry.function == name and entry.check not in NOT_IN_NOTEBOOK:
                summary = " ".join(entry.doc.split("\n\n")[0].split())  # its docstring's first paragraph
                hidden = f"# Hidden check {entry.check} ({_points(points[entry.check])}): {summary}\n{GRADED_OUTSIDE}"
                cells.append(
                    new_code_cell(
                        hidden,
                        metadata=_meta(f"check_{entry.check}", grade=True, points=points[entry.check], locked=True),
                    )
                )
    cells.append(
        new_markdown_cell("## Knowledge check\n\nAnswer each question by setting the variable in the cell below it.")
    )
    for question in QUESTIONS:
        cells.append(
            new_markdown_cell(
                f"**{question.name}.** {question.text}\n\nExample of the form: `{question.name} = {question.example}`"
            )
        )
        answer = f"### BEGIN SOLUTION\n{question.name} = {question.answer!r}\n### END SOLUTION"
        cells.append(new_code_cell(answer, metadata=_meta(question.name, solution=True)))
        check = (
            f"# Checks {question.name} ({_points(POINTS)}): the value you set above, written out as in the example."
            f"\n{GRADED_OUTSIDE}"
        )
        meta = _meta(f"check_{question.name}", grade=True, points=POINTS, locked=True)
        cells.append(new_code_cell(check, metadata=meta))
    notebook = new_notebook(
        cells=cells,
        metadata={
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
    )
    for index, cell in enumerate(notebook.cells):
        cell["id"] = f"cell-{index:03d}"  # stable ids: the committed notebook must not change from build to build
    nbformat.validate(notebook)
    return json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
