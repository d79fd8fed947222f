"""The class's names in one place: each student's result file, feedback page and printed name.

The batch's results, its CSV and terminal lines, and the dashboard's pages all take a student's
file names from here, so two students never share a file: "a b" and "a_b", a name written with
two Unicode spellings, or a name too long for the file system each get a file of their own.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import Counter
from pathlib import Path

# nbgrader's course folders that hold one folder per student: <folder>/<student>/<assignment>/...
NBGRADER_FOLDERS = ("submitted", "autograded")


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def result_names(names: list[str]) -> dict[str, str]:
    """Student name -> result file name, one to one: a name changed to be safe, or shortened, gets a hash of itself."""
    files = {}
    for name in names:
        safe = _safe(name)
        safe = f"_{safe[1:]}" if safe.startswith(".") else safe or "_"
        if safe != name or len(safe) > 100:
            digest = hashlib.sha256(os.fsencode(name)).hexdigest()[:12]
            safe = f"{safe[:100]}-{digest}"
        files[name] = f"{safe}.json"
    taken = Counter(files.values())
    for name, file in files.items():
        if taken[file] > 1:  # a name made to look like another's safe form: both get their whole hash
            files[name] = f"{_safe(name)[:80]}-{hashlib.sha256(os.fsencode(name)).hexdigest()}.json"
    return files


def student_of(submission: Path) -> str:
    """The student one submission belongs to, named as a batch names them: the folder under nbgrader's
    ``submitted/`` (``submitted/alice/sdpa/sdpa.ipynb`` is alice's), else the submission's own name."""
    parts = Path(os.path.abspath(submission)).parts
    above = [i for i, part in enumerate(parts[:-1]) if part in NBGRADER_FOLDERS]
    return parts[above[-1] + 1] if above else submission.name


def page_names(names: list[str]) -> dict[str, str]:
    """Student name -> feedback page file name: the result file's name, one to one as it is."""
    return {name: file.removesuffix(".json") + ".html" for name, file in result_names(names).items()}
