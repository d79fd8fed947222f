"""Why a submission did not load, in the student's words: what is not allowed while grading, and their line.

The worker reports an exception's type and message (untrusted strings); the sentence the student
reads is made here, in the grading process, from the type, the student's own line (read from the
source the grader holds) and nothing of the grader's: no path of its interpreter, folders or files.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from pathlib import Path

from autograder.checks.integrity import GRADER_MODULES
from autograder.read.submission import cells_of

# where the worker says the exception was raised: "(attention.py, line 12)", or in a notebook's cell "(cell 7, line 3)"
_LINE = re.compile(r"\((attention\.py|cell (\d{1,6})), line (\d{1,9})\)\s*$")
_MODULE = re.compile(r"No module named '([\w.]+)'")
# the kernel's refusals: EPERM, EACCES, EROFS
_REFUSED = re.compile(r"\[Errno (1|13|30)\]")
_RUNS = re.compile(
    r"subprocess|Popen|os\.(system|popen|exec|spawn|posix_spawn|fork)|check_output|check_call|getoutput|"
    r"getstatusoutput|\brun\("
)
_FILES = re.compile(
    r"\bopen\(|write|save|mkdir|makedirs|remove|unlink|rename|copy|touch|rmtree|Path\(|chdir|listdir|glob"
)
RUN_ONLY_DEFINITIONS = (
    "grading imports your file to call its functions: move that line into a function, or under"
    ' `if __name__ == "__main__":`, so that it does not run on import'
)
# the grader's own places, scrubbed from any message shown to a student
_GRADER_PLACES = sorted({sys.prefix, sys.base_prefix, str(Path(__file__).resolve().parents[2])}, key=len, reverse=True)


def may_import(allowed: Sequence[str]) -> str:
    """What a submission may import, in words: the settings' [imports] allowed, after the standard library."""
    names = ["Python's standard library", *allowed]
    return f"a submission may import only {', '.join(names[:-1])} and {names[-1]}"


def explain(error: str, message: str, source: str, shown: str = "attention.py", *, allowed: Sequence[str]) -> str:
    """One sentence: ``shown`` could not be loaded, and why, with the student's line where there is one. ``allowed``:
    the settings' [imports] allowed, named when the line imports something else."""
    found = _LINE.search(message)
    text, where = "", "a line run at import"
    if found:
        cell, number = found.group(2), int(found.group(3))
        lines = (cells_of(source).get(int(cell), "") if cell else source).splitlines()
        text = lines[number - 1].strip() if 0 < number <= len(lines) else ""
        if text:  # a notebook's line by its cell (submission.code_cells' numbers), as the student counts them
            where = f"{f'cell {cell}, ' if cell else ''}line {number} (`{text[:80]}`)"
    module = _MODULE.search(message)
    if error in ("ModuleNotFoundError", "ImportError") and module:
        name = module.group(1)
        if name.split(".")[0] in GRADER_MODULES:
            return (
                f"{shown} could not be loaded: {where} imports {name}, the grader's own code, which a submission"
                " may not import while grading"
            )
        if name.split(".")[0] in (*allowed, *sys.stdlib_module_names):
            return f"{shown} could not be loaded: {where} imports {name}, which does not exist: check its name"
        return (
            f"{shown} could not be loaded: {where} imports {name}; {may_import(allowed)} (the course's settings,"
            f" [imports] allowed), and only {shown} is graded: remove that import"
        )
    if _REFUSED.search(message) or error == "PermissionError":
        if _RUNS.search(text):
            what = "runs a program, which is not allowed while grading"
        elif _FILES.search(text):
            what = "uses a file outside its own folder, which is not allowed while grading"
        else:
            what = (
                "does something not allowed while grading (running a program, or using a file outside its own folder)"
            )
        return f"{shown} could not be loaded: {where} {what}; {RUN_ONLY_DEFINITIONS}"
    detail = f"{error}: {message}" if message else error
    return f"{shown} could not be loaded: {scrub(detail)}"


def scrub(text: str) -> str:
    """``text`` with the grader's own folders (its interpreter, its package) replaced by '...'."""
    for place in _GRADER_PLACES:
        if len(place) > 1:
            text = text.replace(place, "...")
    return text
