"""The nbgrader path finds a renamed notebook as sdpa-grade does: ``graded_name``, autograde's pre-convert hook.

nbgrader grades a student's notebook only under its released name (``sdpa.ipynb``): a browser's second download
(``sdpa (1).ipynb``) or JupyterLab's copy (``sdpa-Copy1.ipynb``) handed in alone is "Skipping unknown notebook", and
the student scores 0 with no other word. Before nbgrader looks at a student's folder, ``graded_name`` applies the one
rule that picks the graded file on every path (read/submission.choose, over ``submitted/<student>/``, as
``sdpa-grade --batch`` does): where the rule picks a notebook of another name and the folder holds none of the
released name, a copy of its bytes is put beside it under that name, and the log names the student, the file and the
reason. Where the rule picks the released notebook, other candidates are named in the log, for review, as
sdpa-grade flags them. assignments/nbgrader_config.py sets it as ``c.Autograde.pre_convert_hook``.
"""

from __future__ import annotations

from pathlib import Path

from autograder.assignment.paths import NOTEBOOK
from autograder.config import ConfigError, load_settings
from autograder.read.submission import Ungradable, choose, is_notebook, read_bytes


def graded_name(assignment: str, student: str, notebooks: list[str], **_) -> None:
    """nbgrader's pre-convert hook for one student's folder (``notebooks``: the .ipynb files nbgrader found in it,
    a list nbgrader reads after the hook): see the module's docstring. Never raises (nbgrader would only log it)."""
    from traitlets.log import get_logger

    log = get_logger()
    if not notebooks:
        return
    folder = Path(notebooks[0]).parent  # submitted/<student>/<assignment>/
    released = folder / NOTEBOOK.name
    try:
        limits = load_settings().limits
        choice = choose(folder.parent, limits)
    except (ConfigError, Ungradable, OSError) as error:
        log.warning("sdpa-grade: %s: no graded file chosen (%s)", folder.parent.name, error)
        return
    others = ", ".join(choice.others)
    if choice.path == released:
        if choice.others:
            log.warning(
                "sdpa-grade: %s: %s is graded; also handed in, for review: %s", folder.parent.name, choice.relative,
                others,
            )  # fmt: skip
        return
    if released.exists():  # the rule prefers another file (attention.py): nbgrader can grade only its notebook
        log.warning(
            "sdpa-grade: %s: nbgrader grades %s, while the one rule (and sdpa-grade) grades %s: review this student",
            folder.parent.name, released.relative_to(folder.parent).as_posix(), choice.relative,
        )  # fmt: skip
        return
    if not is_notebook(choice.path):
        log.warning(
            "sdpa-grade: %s: the file graded by the one rule is %s, which nbgrader cannot grade as %s (grade this"
            " student with sdpa-grade)", folder.parent.name, choice.relative, NOTEBOOK.name,
        )  # fmt: skip
        return
    try:
        data, _ = read_bytes(choice.root, choice.path, limits)  # the gate's read: a regular file, within its bound
    except Ungradable as reason:
        log.warning("sdpa-grade: %s: %s is not graded: %s", folder.parent.name, choice.relative, reason)
        return
    released.write_bytes(data)
    notebooks.append(str(released))
    log.warning(
        "sdpa-grade: %s handed in no %s: %s is graded in its place (a renamed copy: a second download, a notebook"
        " copied in Jupyter); flagged for review%s",
        folder.parent.name,
        NOTEBOOK.name,
        choice.relative,
        f"; also handed in: {others}" if others else "",
    )
