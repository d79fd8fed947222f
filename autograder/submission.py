"""Read a submission (an attention.py or a notebook) into the Python source the worker loads."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path


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


def notebook_source(text: str) -> str:
    """The code of a notebook's solution and set-up cells; test cells, magics and shell escapes left out."""
    try:
        notebook = json.loads(text)
        cells = notebook["cells"]
    except (ValueError, KeyError, TypeError):
        raise Ungradable("the notebook is not valid .ipynb JSON") from None
    parts = []
    number = 0
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
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


def read_submission(path: Path, folder: Path) -> Submitted:
    """Write the submission's Python source to ``folder/attention.py``; return it with the file it came from.

    Every submission that cannot be read is refused alike (``sdpa-grade`` exits 2), with a reason
    that names what was given: a path that is not there, a folder, a notebook or a .py file. The
    refusal carries the chosen file (and its SHA-256 when its bytes were read), for the results' provenance.
    """
    top, path = path, submitted_file(path)
    try:
        return _read(top, path, folder)
    except Ungradable as reason:
        reason.file = path if path.exists() or path.is_symlink() else None
        raise


def _read(top: Path, path: Path, folder: Path) -> Submitted:
    _refuse_links(path, top)
    if not path.exists():
        raise Ungradable(f"there is no file or folder at {path}", missing=True)
    notebook = path.suffix == ".ipynb"
    what = f"the notebook {path.name}" if notebook else f"the file {path.name}"
    if not notebook and path.suffix != ".py":
        raise Ungradable(f"{what} is neither a .py file nor a notebook (.ipynb)")
    if not path.is_file():
        raise Ungradable(f"{path} is not a file", missing=True)
    try:
        data = path.read_bytes()  # read once: what is graded is what is hashed
    except OSError as error:
        raise Ungradable(f"{what} cannot be read ({error.strerror or error})", missing=True) from None
    digest = hashlib.sha256(data).hexdigest()
    try:
        return Submitted(_source(data, path, notebook, what, folder), path, digest)
    except Ungradable as reason:
        reason.sha256 = digest
        raise


def _source(data: bytes, path: Path, notebook: bool, what: str, folder: Path) -> Path:
    try:
        text = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")  # as read_text() reads it
    except UnicodeDecodeError:
        raise Ungradable(f"{what} is not UTF-8 text") from None
    if notebook:
        try:
            text = notebook_source(text)
        except Ungradable:
            raise Ungradable(f"{what} is not valid .ipynb JSON") from None
        if not text.strip():
            raise Ungradable(f"{what} holds no code (no code cell with anything in it)")
    elif not text.strip():
        raise Ungradable(f"{what} is empty")
    target = folder / "attention.py"
    target.write_text(text, encoding="utf-8")
    return target
