"""Read a submission (an attention.py or a notebook) into the Python source the worker loads."""

from __future__ import annotations

from pathlib import Path

from autograder import bounded
from autograder.config import Limits, load_settings


class Ungradable(Exception):
    """The submission cannot be graded at all; the message says why, for the student.

    ``missing`` is True when there was nothing to read (no such file, or it cannot be read): more
    likely a wrong path than a student's mistake. ``sdpa-grade`` exits 2 for every ungradable one.
    """

    def __init__(self, reason: str, *, missing: bool = False) -> None:
        super().__init__(reason)
        self.missing = missing


def notebook_source(text: str, limits: Limits | None = None) -> str:
    """The code of a notebook's solution and set-up cells; test cells, magics and shell escapes left out.

    The JSON's nesting and size are checked before it is decoded (``limits.notebook_depth`` and
    ``notebook_containers``; the defaults' without ``limits``), and every cell's shape before the cells are walked
    (autograder/bounded.py); a notebook that breaks one is Ungradable."""
    try:
        return _notebook_code(text, load_settings(environ={}).limits if limits is None else limits)
    except bounded.Refused as why:
        raise Ungradable(f"the notebook {why}") from None


def _notebook_code(text: str, limits: Limits) -> str:
    cells = bounded.notebook_cells(bounded.load_json(text, limits.notebook_depth, limits.notebook_containers))
    parts = []
    number = 0
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        nbgrader = cell.get("metadata", {}).get("nbgrader", {})
        if nbgrader.get("grade") and not nbgrader.get("solution"):
            continue  # a test cell: the grader brings its own checks
        number += 1
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        kept = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!")))
        if kept.strip():  # a notebook whose code cells are all empty holds no code: "" (read_submission refuses it)
            parts.append(_as_cell(kept, number))
    return "".join(parts)


def _as_cell(code: str, number: int) -> str:
    """Run one cell's code so that its error stops that cell only, as in a notebook run by nbgrader."""
    return (
        f"try:\n    exec(compile({code!r}, 'cell{number}/attention.py', 'exec'), globals())\n"
        f"except Exception as error:\n    print('cell {number} raised', type(error).__name__, error)\n\n"
    )


def _refuse_links(path: Path, top: Path) -> None:
    """A submission, or a folder on the way to it, that is a symbolic link points outside what was submitted."""
    for step in (path, *path.parents):
        if step.is_symlink():
            raise Ungradable(f"{step.name} is a symbolic link (to {step.readlink()}); submit the file itself")
        if step == top:
            return


def submitted_file(path: Path) -> Path:
    """The file that is graded: ``path`` itself, or in a folder its attention.py (else its notebook)."""
    if path.is_dir() and not path.is_symlink():
        candidates = sorted(path.rglob("attention.py")) or sorted(path.rglob("*.ipynb"))
        candidates = [c for c in candidates if ".ipynb_checkpoints" not in c.parts]
        if not candidates:
            raise Ungradable(f"the folder {path.name}/ holds no attention.py and no notebook (.ipynb)", missing=True)
        return candidates[0]
    return path


def shown_name(path: Path) -> str:
    """What the student's feedback calls the submission: "your notebook", or attention.py
    (whatever the file is called here)."""
    try:
        return "your notebook" if submitted_file(path).suffix == ".ipynb" else "attention.py"
    except Ungradable:
        return "attention.py"


def read_submission(path: Path, folder: Path, limits: Limits | None = None) -> Path:
    """Write the submission's Python source to ``folder/attention.py`` and return that path.

    Every submission that cannot be read is refused alike (``sdpa-grade`` exits 2), with a reason
    that names what was given: a path that is not there, a folder, a notebook or a .py file. The bounds of
    ``limits`` (by default the settings' [limits]) are checked before the work: the file's size before it is
    read, a notebook's nesting before it is decoded, the code's size before anything parses it.
    """
    limits = load_settings(environ={}).limits if limits is None else limits
    top, path = path, submitted_file(path)
    _refuse_links(path, top)
    if not path.exists():
        raise Ungradable(f"there is no file or folder at {path}", missing=True)
    notebook = path.suffix == ".ipynb"
    what = f"the notebook {path.name}" if notebook else f"the file {path.name}"
    if not notebook and path.suffix != ".py":
        raise Ungradable(f"{what} is neither a .py file nor a notebook (.ipynb)")
    if not path.is_file():
        raise Ungradable(f"{path} is not a file", missing=True)
    code_bound = f"at most {limits.source_kb} KiB of code is graded: remove the data (or anything large) from it"
    if notebook:
        size_bound, too_large = limits.notebook_mb << 20, f"at most {limits.notebook_mb} MiB of notebook is read"
    else:
        size_bound, too_large = limits.source_kb << 10, code_bound
    try:
        text = bounded.read_text(path, size_bound, too_large)
    except bounded.Refused as why:
        raise Ungradable(f"{what} {why}") from None
    except UnicodeDecodeError:
        raise Ungradable(f"{what} is not UTF-8 text") from None
    except OSError as error:
        raise Ungradable(f"{what} cannot be read ({error.strerror or error})", missing=True) from None
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
