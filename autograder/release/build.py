"""``sdpa-build``: regenerate what students receive from the single source in ``reference/``."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from autograder.assignment.paths import REFERENCE, REQUIREMENTS, TEMPLATE
from autograder.release.template import stub_source

if TYPE_CHECKING:
    from autograder.config import Settings

# the handout and its picture, beside the stubs: the feedback sends students to the handout's sections
HANDOUT_COPIES = (Path("docs/handout.md"), Path("docs/saturation.svg"))

GRADING_DOC = Path("docs/grading.md")  # its table of the hidden checks is written from the checks themselves
TABLE_BEGIN = (
    "<!-- the checks' table: written by sdpa-build from their markers and docstrings; edit those, not this -->"
)
TABLE_END = "<!-- end of the checks' table -->"
CONFTEST = Path("student_template/conftest.py")  # its order of the functions and what each builds on are derived
CONFTEST_BEGIN = "# --- written by sdpa-build from the reference: the functions in order, and what each builds on ---"
CONFTEST_END = "# --- end of what sdpa-build writes ---"

HEADER = "# Your implementation. Replace every `raise NotImplementedError`, then run `pytest` in this folder.\n"


def find_root(start: Path | None = None) -> Path:
    """The project folder: the first of ``start`` and its parents that holds the reference."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / REFERENCE).is_file():
            return folder
    package_root = Path(__file__).resolve().parents[2]
    if (package_root / REFERENCE).is_file():
        return package_root
    raise FileNotFoundError(f"no {REFERENCE} in {here} or its parents: run sdpa-build in the project folder")


def reference_source(root: Path, settings: Settings | None = None) -> str:
    """The reference as the hand-out is built from it: without the functions whose part ``settings`` turn off (the
    default settings' without them)."""
    from autograder.assignment.parts import without

    return without((root / REFERENCE).read_text(), _settings(settings).parts.off())


def _settings(settings: Settings | None) -> Settings:
    from autograder.config import load_settings

    return settings or load_settings(environ={})


def build_template(root: Path, settings: Settings | None = None) -> str:
    """The student's attention.py: the reference (its functions of the parts turned on) with a stub in place of every
    solution region, then the knowledge check (``knowledge_check``)."""
    return template_of(reference_source(root, settings), _settings(settings).lesson)


def template_of(handed_out: str, lesson) -> str:
    """The template made from the reference's source as handed out (its parts chosen): the header, the stubs, the
    knowledge check. The one recipe, for the build and for the similarity pass installed from a wheel."""
    return HEADER + stub_source(handed_out) + knowledge_check(lesson)


def knowledge_check(lesson) -> str:
    """The knowledge check at the end of the template, as the notebook asks it: each question (on the lesson's
    shapes) as comments, then its line with the example in place of the answer (read, never run: checks/quiz.py's
    ``answers_in_py``), so that a .py is graded out of the same maximum as the notebook."""
    import ast
    import textwrap

    from autograder.checks.quiz import POINTS, questions

    worth = f"{POINTS:g} point" + ("" if POINTS == 1 else "s")
    lines = [
        "", "",
        "# Knowledge check: replace each example value below with your answer, written out as in the example",
        f"# (a letter in quotes, a number, a tuple, True or False). Graded with your code, {worth} each.",
    ]  # fmt: skip
    for question in questions(lesson):
        try:  # an example that is no value written out (<True or False>) is a comment beside None: the file runs
            ast.literal_eval(question.example)
            example = question.example
        except (ValueError, SyntaxError):
            example = f"None  # {question.example}"
        lines += ["", *textwrap.wrap(f"{question.name}. {question.text}", 116, initial_indent="# ",
                                     subsequent_indent="#   "), f"{question.name} = {example}"]  # fmt: skip
    return "\n".join(lines) + "\n"


def build_requirements(root: Path) -> str:
    """The student's requirements.txt: torch in the range the grader is tested with (pyproject.toml's), from
    PyTorch's CPU index, so that ``pip install -r requirements.txt`` takes a CPU build of some 200 MB,
    not a CUDA one."""
    from autograder.release.gradescope import CPU_INDEX, torch_requirement

    return (
        "# What the public tests need. Install with:  pip install -r requirements.txt\n"
        "# torch comes as a CPU build (all this assignment needs), in the range the grader is tested with.\n"
        f"--extra-index-url {CPU_INDEX}\n"
        f"{torch_requirement(root)}\n"
        "numpy\n"
        "pytest\n"
    )


def checks_table() -> str:
    """docs/grading.md's table of the hidden checks, one row per check in the order they run: its function, category,
    points (the default settings': its marker's, or defaults.toml's override) and its docstring. A check of an
    optional part ([parts]) says so after its function, with the points its marker declares."""
    from autograder.assignment.catalogue import catalogue
    from autograder.config import load_settings

    settings = load_settings(environ={})
    off = settings.parts.off()
    rows = ["| check | function | category | points | what it checks |", "|---|---|---|---|---|"]
    for entry in catalogue():
        said = " ".join(entry.doc.split()).replace("|", "\\|")
        function = f"{entry.function} (optional: [parts])" if entry.function in off else entry.function
        points = entry.points if entry.function in off else settings.points[entry.check]
        rows.append(f"| {entry.check} | {function} | {entry.category} | {points:g} | {said} |")
    return "\n".join(rows) + "\n"


def build_grading_doc(root: Path) -> str:
    """docs/grading.md with its table of the checks (between TABLE_BEGIN and TABLE_END) written anew."""
    text = (root / GRADING_DOC).read_text()
    if text.count(TABLE_BEGIN) != 1 or text.count(TABLE_END) != 1 or text.index(TABLE_BEGIN) > text.index(TABLE_END):
        raise ValueError(f"{GRADING_DOC} must hold the line {TABLE_BEGIN!r}, then the line {TABLE_END!r}, once each")
    before, rest = text.split(TABLE_BEGIN, 1)
    return before + TABLE_BEGIN + "\n" + checks_table() + TABLE_END + rest.split(TABLE_END, 1)[1]


def derived_block(functions: list[str], built_from: dict[str, tuple[str, ...]]) -> str:
    """The student's conftest's lines that sdpa-build writes: the functions in the reference's order (the order "Next:"
    follows) and, for each built from others, those (its tests may fail only because one of them does)."""
    lines = [CONFTEST_BEGIN, "ORDER = ["]
    lines += [f"    {name!r}," for name in functions]
    lines += ["]", "BUILDS_ON = {"]
    lines += [f"    {name!r}: {built_from[name]!r}," for name in functions if built_from[name]]
    lines += ["}", CONFTEST_END]
    return "\n".join(lines).replace("'", '"') + "\n"


def build_conftest(root: Path, settings: Settings | None = None) -> str:
    """student_template/conftest.py with its derived lines (between CONFTEST_BEGIN and CONFTEST_END) written anew
    from reference/attention.py (its functions of the parts turned on)."""
    from autograder.assignment.composition import calls, functions

    source = reference_source(root, settings)
    text = (root / CONFTEST).read_text()
    before, rest = text.split(CONFTEST_BEGIN + "\n", 1)
    return before + derived_block(functions(source), calls(source)) + rest.split(CONFTEST_END + "\n", 1)[1]


def targets(settings: Settings | None = None) -> dict[Path, Callable[[Path], str | bytes]]:
    """Every generated file, relative to the project folder, with the function that writes it, built with
    ``settings`` (the default settings without them): the lesson's shapes (release/lesson.py) and the parts turned
    on (assignment/parts.py)."""
    from autograder.assignment.parts import handout_without
    from autograder.config import load_settings
    from autograder.release import lesson as shapes
    from autograder.release import notebook, settings_file

    written = load_settings(environ={}).lesson  # the shapes the sources are written with
    settings = _settings(settings)
    lesson, off = settings.lesson, settings.parts.off()

    def copy(source: Path) -> Callable[[Path], str | bytes]:
        if source.suffix == ".md":  # the handout, with the lesson's shapes and the parts turned on
            return lambda root: shapes.render(
                handout_without((root / source).read_text(), off), written, lesson, shapes.EXAMPLE, str(source)
            )
        return lambda root: (root / source).read_bytes()

    def public_tests(root: Path) -> str:  # the file students receive is its own source: its lesson line rewritten
        return shapes.render_public_tests((root / notebook.PUBLIC_TESTS).read_text(), lesson)

    return {
        TEMPLATE: lambda root: build_template(root, settings),
        REQUIREMENTS: build_requirements,
        **{TEMPLATE.with_name(source.name): copy(source) for source in HANDOUT_COPIES},
        notebook.PUBLIC_TESTS: public_tests,
        notebook.NOTEBOOK: lambda root: shapes.render_notebook(
            notebook.build_notebook(root, settings), written, lesson
        ),
        notebook.PLOT: copy(Path("docs") / notebook.PLOT.name),  # the handout's figure
        settings_file.DEFAULTS: settings_file.build_defaults,  # each setting's comment from its declaration
        GRADING_DOC: build_grading_doc,
        CONFTEST: lambda root: build_conftest(root, settings),
    }


def stale_files(root: Path, settings: Settings | None = None) -> list[Path]:
    """The generated files whose committed content differs from what a build (with ``settings``) would write."""
    stale = []
    for path, build in targets(settings).items():
        expected = build(root)
        data = expected.encode() if isinstance(expected, str) else expected
        target = root / path
        if not target.is_file() or target.read_bytes() != data:
            stale.append(path)
    return stale


def write_all(root: Path, settings: Settings | None = None) -> list[Path]:
    """Write every generated file (with ``settings``); return the ones that changed."""
    changed = stale_files(root, settings)
    for path, build in targets(settings).items():
        if path in changed:
            content = build(root)
            data = content.encode() if isinstance(content, str) else content
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_bytes(data)
    return changed


@dataclass(frozen=True)
class BuildOptions:
    """What ``sdpa-build`` was asked to do, typed; built once from the command line (cli.build)."""

    check: bool = False  # only report stale generated files (exit 1 if any)
    root: Path | None = None  # the project folder (default: found from the current one)
    gradescope: Path | None = None  # also write a Gradescope autograder bundle here
    config: Path | None = None  # the settings to build with, and to ship in the bundle
    torch: str = "cpu"  # the torch build the bundle's setup.sh installs: cpu or gpu


def run_build(options: BuildOptions) -> int:
    """``sdpa-build``: regenerate the generated files (or, with ``check``, name the stale ones), and write the bundle
    asked for; 2 for a project, settings or docs that cannot be built from."""
    try:
        root = find_root(options.root)
    except FileNotFoundError as error:
        print(f"sdpa-build: {error}", file=sys.stderr)
        return 2
    settings = None
    if options.config is not None:
        from autograder.config import ConfigError, load_settings

        try:
            settings = load_settings(options.config, environ={})
        except ConfigError as error:
            print(f"sdpa-build: {error}", file=sys.stderr)
            return 2
    try:
        stale = stale_files(root, settings)
    except ValueError as error:  # docs/grading.md without its table's markers, public tests without their lesson line
        print(f"sdpa-build: {error}", file=sys.stderr)
        return 2
    if options.check:
        for path in stale:
            print(f"stale: {path} (run sdpa-build to regenerate it)")
        if not stale:
            print("generated files are up to date")
        return 1 if stale else 0
    written = write_all(root, settings)
    for path in written:
        print(f"wrote {path}")
    if not written:
        print("generated files are up to date")
    if options.gradescope:
        from autograder.release.gradescope import write_bundle

        if options.config is not None:
            from autograder.config import ConfigError, load_settings

            try:
                load_settings(options.config)
            except ConfigError as error:
                print(f"sdpa-build: {error}", file=sys.stderr)
                return 2
        write_bundle(root, options.gradescope, options.config, options.torch)
        print(f"wrote {options.gradescope}")
    return 0
