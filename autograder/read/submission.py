"""Read a submission (an attention.py or a notebook) into the Python source the worker loads."""

from __future__ import annotations

import hashlib
import os
import re
import unicodedata
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from autograder.assignment.paths import NOTEBOOK, TEMPLATE
from autograder.config import Limits, load_settings
from autograder.read import bounded


class Ungradable(Exception):
    """The submission cannot be graded at all; the message says why, for the student.

    ``missing`` is True when there was nothing to read (no such file, or it cannot be read): more
    likely a wrong path than a student's mistake. ``sdpa-grade`` exits 2 for every ungradable one.
    """

    def __init__(self, reason: str, *, missing: bool = False) -> None:
        super().__init__(reason)
        self.missing = missing
        self.file: Path | None = None  # the file chosen for grading, where there was one (provenance names it)
        self.sha256: str | None = None  # the SHA-256 of its bytes, where they were read


@dataclass(frozen=True)
class Submitted:
    """What the read stage read: the source the worker loads, the file it came from, and that file's SHA-256."""

    source: Path
    file: Path
    sha256: str


def notebook_source(text: str, limits: Limits | None = None) -> str:
    """The code of a notebook's solution and set-up cells; test cells, magics and shell escapes left out.

    The JSON's nesting and size are checked before it is decoded (``limits.notebook_depth`` and
    ``notebook_containers``; the defaults' without ``limits``), and every cell's shape before the cells are walked
    (autograder/read/bounded.py); a notebook that breaks one is Ungradable."""
    try:
        return _notebook_code(text, load_settings(environ={}).limits if limits is None else limits)
    except bounded.Refused as why:
        raise Ungradable(f"the notebook {why}") from None


def _notebook_code(text: str, limits: Limits) -> str:
    # a notebook whose code cells are all empty holds no code: "" (the read stage refuses it)
    return "".join(_as_cell(kept, number) for number, kept in code_cells(text, limits) if kept.strip())


def notebook_cells(text: str, limits: Limits) -> list[dict]:
    """The notebook's cells, read within its bounds (bounded.Refused past one): its outputs and attachments dropped
    without being decoded, the rest at most ``limits.notebook_mb``, its JSON's nesting and each cell's shape checked
    (autograder/read/bounded.py). Every reader of a notebook's cells reads them here."""
    notebook = bounded.load_notebook(text, limits.notebook_mb << 20, limits.notebook_depth, limits.notebook_containers)
    return bounded.notebook_cells(notebook)


def code_cells(text: str, limits: Limits) -> list[tuple[int, str]]:
    """Each code cell the grader runs, with its magics and shell escapes left out: the solution and set-up cells, not
    the test cells. Each is numbered by its place in the notebook, as the student counts its cells (every cell,
    markdown and test cells included, from 1 at the top), which the feedback cites. The notebook's bounds are checked
    first (bounded.Refused)."""
    cells = notebook_cells(text, limits)
    found = []
    for number, cell in enumerate(cells, 1):
        if cell["cell_type"] != "code":
            continue
        nbgrader = cell.get("metadata", {}).get("nbgrader", {})
        if nbgrader.get("grade") and not nbgrader.get("solution"):
            continue  # a test cell: the grader brings its own checks
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        kept = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
        found.append((number, "\n".join(kept)))
    return found


_CELL_FILE = re.compile(r"cell([1-9][0-9]{0,5})/attention\.py")  # cell_file's names (no nested quantifier)


def cell_file(number: int) -> str:
    """The file name a notebook's cell ``number`` is compiled under (the worker's code guard accepts a cell's code only
    under it: student_side/blocking._CELL_NAME); the worker cites a line of it as "cell N, line M"."""
    return f"cell{number}/attention.py"


def _as_cell(code: str, number: int) -> str:
    """Run one cell's code so that its error stops that cell only, as in a notebook run by nbgrader."""
    return (
        f"try:\n    exec(compile({code!r}, {cell_file(number)!r}, 'exec'), globals())\n"
        f"except Exception as error:\n    print('cell {number} raised', type(error).__name__, error)\n\n"
    )


def cells_of(source: str, tree=None) -> dict[int, str]:
    """The notebook's cells in a graded source (``_as_cell``'s wrappers at its top level), by their number: what a
    cited "cell N, line M" is read from. {} for a source that holds none (an attention.py) or is not Python.
    ``tree``: the source's syntax tree where the caller has parsed it already."""
    import ast

    if tree is None:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return {}
    found = {}
    for node in tree.body:
        if not (isinstance(node, ast.Try) and len(node.body) == 1 and isinstance(node.body[0], ast.Expr)):
            continue
        run = node.body[0].value
        if not (_called(run, "exec") and run.args and _called(run.args[0], "compile") and len(run.args[0].args) > 1):
            continue
        code, name = run.args[0].args[:2]
        if isinstance(code, ast.Constant) and isinstance(code.value, str) and isinstance(name, ast.Constant):
            number = _CELL_FILE.fullmatch(name.value) if isinstance(name.value, str) else None
            if number is not None:
                found[int(number.group(1))] = code.value
    return found


def _called(node, name: str) -> bool:
    import ast

    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name


def _refuse_links(path: Path, top: Path) -> None:
    """A submission, or a folder on the way to it below ``top``, that is a symbolic link points outside what was
    submitted."""
    for step in (path, *path.parents):
        if step == top:
            return
        if step.is_symlink():
            raise Ungradable(f"{step.name} is a symbolic link (to {step.readlink()}); submit the file itself")


# The graded file's own names, in the rule's order, from where the project names them: the template's attention.py,
# and the notebook nbgrader releases (the source notebook's name)
OWN_NAMES = (TEMPLATE.name, NOTEBOOK.name)
# What archive tools, editors and Python leave in a folder: never a submission. Every name that starts with "." is
# left out too (.ipynb_checkpoints, a Mac zip's ._x AppleDouble files, .DS_Store, .git).
DEBRIS = frozenset({"__MACOSX", "__pycache__"})


@dataclass(frozen=True)
class Choice:
    """The file a submission is graded on, by the one rule (``choose``), and what else could have been.

    Paths in ``relative`` and ``others`` are POSIX paths relative to ``root`` (what was submitted: the
    student's folder, or a batch folder for the files at its top). ``others`` not empty, or ``stopped``
    set, flags the student for the instructor's review.
    """

    root: Path
    path: Path  # the graded file
    relative: str
    others: tuple[str, ...] = ()  # the other candidates, in the rule's order
    stopped: tuple[str, int] | None = None  # the bound that stopped the search ([limits] key, value); None: whole

    @property
    def candidates(self) -> tuple[str, ...]:
        """Every candidate, the graded one first."""
        return (self.relative, *self.others)


def folded(name: str) -> str:
    """A file name as a Mac or Windows disk compares it: Unicode-normalised (NFKC) and case-folded. ``Attention.py``
    and ``attention.py`` are one file there: the instructor who unzips the upload sees one of them."""
    return unicodedata.normalize("NFKC", name).casefold()


def is_notebook(path: Path) -> bool:
    return folded(path.suffix) == ".ipynb"


def _rank(relative: str) -> tuple:
    """The rule's order: the assignment's own names first (the exact name before one that differs only in case or
    Unicode form), the shallowest first, a .py before a notebook, by path."""
    parts = relative.split("/")
    name = parts[-1]
    if name in OWN_NAMES:
        own = OWN_NAMES.index(name)
    else:
        own = next((i + 0.5 for i, own_name in enumerate(OWN_NAMES) if folded(name) == own_name), len(OWN_NAMES))
    return (own == len(OWN_NAMES), len(parts), own, not folded(name).endswith(".py"), relative)


def _candidate(name: str) -> bool:
    """A file the rule could grade: a notebook, or a .py named like the assignment's (attention.py, a copy of it),
    its name compared as file systems compare it (``folded``)."""
    name = folded(name)
    return name.endswith(".ipynb") or (name.endswith(".py") and name.startswith(TEMPLATE.stem))


def _walk(top: Path, depth: int, files: int) -> tuple[list[str], tuple[str, int] | None]:
    """The candidates in ``top``, breadth first, with no recursion: at most ``depth`` levels of folders below
    ``top`` and ``files`` entries in all, counted as they are read. Symbolic links to folders are not followed."""
    found: list[str] = []
    stopped = None
    seen = 0
    queue = deque([(top, "")])
    while queue:
        folder, prefix = queue.popleft()
        level = prefix.count("/")
        entries = []
        try:
            with os.scandir(folder) as listing:
                for entry in listing:
                    seen += 1
                    if seen > files:
                        stopped = ("folder_files", files)
                        break
                    entries.append(entry)
        except OSError:
            continue  # a folder that cannot be listed holds nothing to grade
        for entry in sorted(entries, key=lambda e: e.name):
            if entry.name.startswith(".") or entry.name in DEBRIS:
                continue
            relative = f"{prefix}{entry.name}"
            if entry.is_dir(follow_symlinks=False):
                if level < depth:
                    queue.append((Path(entry.path), f"{relative}/"))
                elif stopped is None:
                    stopped = ("folder_depth", depth)
            elif _candidate(entry.name):
                found.append(relative)
        if stopped is not None and stopped[0] == "folder_files":
            break
    return found, stopped


def choose(submission: Path | tuple[Path, ...], limits) -> Choice:
    """The one rule that picks the graded file, on every path (a file, a student's folder, a batch's files).

    A file given alone is graded as it is. In a folder: the candidates (``_candidate``) the bounded walk finds,
    in ``_rank``'s order; the first is graded. A tuple is the files at a batch folder's top that share a name
    (``alice.py`` + ``alice.ipynb``): one student, ranked the same way. ``limits`` is the settings' [limits]
    (``folder_depth``, ``folder_files``); a folder whose walk finds nothing is ungradable.
    """
    if isinstance(submission, tuple):
        ranked = sorted(submission, key=lambda file: _rank(file.name))
        return Choice(ranked[0].parent, ranked[0], ranked[0].name, tuple(file.name for file in ranked[1:]))
    if not submission.is_dir() or submission.is_symlink():
        return Choice(submission.parent, submission, submission.name)
    found, stopped = _walk(submission, limits.folder_depth, limits.folder_files)
    if not found:
        searched = ""
        if stopped and stopped[0] == "folder_depth":
            searched = f" within {stopped[1]} levels of folders (limits.folder_depth = {stopped[1]}: no deeper)"
        elif stopped:
            searched = f" in its first {stopped[1]} files and folders (limits.folder_files = {stopped[1]}: no more)"
        raise Ungradable(
            f"the folder {submission.name}/ holds no attention.py and no notebook (.ipynb){searched}",
            missing=stopped is None,
        )
    ranked = sorted(found, key=_rank)
    return Choice(submission, submission.joinpath(*ranked[0].split("/")), ranked[0], tuple(ranked[1:]), stopped)


def shown_name(choice: Choice | None) -> str:
    """What the student's feedback calls the submission: "your notebook", or attention.py
    (whatever the file is called here)."""
    return "your notebook" if choice is not None and is_notebook(choice.path) else "attention.py"


def source_of(data: bytes | None, path: Path | None, digest: str | None, refusal: Ungradable | None, folder: Path,
              limits: Limits) -> Submitted:  # fmt: skip
    """The graded file's bytes, as the gate read them, made into the source the worker loads (``folder/attention.py``):
    a notebook's code cells, or the .py file's text. Raises the gate's refusal, or Ungradable for bytes that are no
    source (not UTF-8, empty, a notebook out of its bounds or with no code), carrying the file and SHA-256."""
    if refusal is not None:
        raise refusal
    notebook = is_notebook(path)
    what = f"the notebook {path.name}" if notebook else f"the file {path.name}"
    try:
        return Submitted(_source(data, notebook, what, folder, limits, _code_bound(limits)), path, digest)
    except Ungradable as reason:
        reason.file, reason.sha256 = path, digest
        raise


def _code_bound(limits: Limits) -> str:
    return f"at most {limits.source_kb} KiB of code is graded: remove the data (or anything large) from it"


def read_bytes(top: Path, path: Path, limits: Limits) -> tuple[bytes, str]:
    """The graded file's bytes and their SHA-256, read once, each bound checked before the work (the gate's read:
    handed_in.take). Raises Ungradable for a link, a path that is not there, a file that is not .py or .ipynb, not a
    regular file, or over its size bound."""
    _refuse_links(path, top)
    if not path.exists():
        raise Ungradable(f"there is no file or folder at {path}", missing=True)
    notebook = is_notebook(path)
    what = f"the notebook {path.name}" if notebook else f"the file {path.name}"
    if not notebook and folded(path.suffix) != ".py":
        raise Ungradable(f"{what} is neither a .py file nor a notebook (.ipynb)")
    if path.is_dir():
        raise Ungradable(f"{path} is not a file", missing=True)
    if notebook:
        size_bound = limits.notebook_file_mb << 20
        too_large = f"at most {limits.notebook_file_mb} MiB of a notebook file is read, outputs included: clear them"
        too_large += " (Jupyter: Edit > Clear Outputs of All Cells) and save it again"
    else:
        size_bound, too_large = limits.source_kb << 10, _code_bound(limits)
    try:
        data = bounded.read_bytes(path, size_bound, too_large)  # read once: what is graded is what is hashed
    except bounded.Refused as why:
        raise Ungradable(f"{what} {why}") from None
    except OSError as error:
        raise Ungradable(f"{what} cannot be read ({error.strerror or error})", missing=True) from None
    return data, hashlib.sha256(data).hexdigest()


def _source(data: bytes, notebook: bool, what: str, folder: Path, limits: Limits, code_bound: str) -> Path:
    try:
        text = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")  # as read_text() reads it
    except UnicodeDecodeError:
        raise Ungradable(f"{what} is not UTF-8 text") from None
    if notebook:
        try:
            text = _notebook_code(text, limits)
        except bounded.Refused as why:
            raise Ungradable(f"{what} {why}") from None
        if not text.strip():
            raise Ungradable(f"{what} holds no code (no code cell with anything in it)")
        if len(text.encode("utf-8")) > limits.source_kb << 10:
            code = f"its code cells hold {bounded.sized(len(text.encode('utf-8')))}"
            raise Ungradable(f"{what} is too large to grade: {code}; {code_bound}")
    elif not text.strip():
        raise Ungradable(f"{what} is empty")
    target = folder / "attention.py"
    target.write_text(text, encoding="utf-8")
    return target
