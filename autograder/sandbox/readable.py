"""What a sandboxed worker may read: Python's standard library, torch and its dependencies, system libraries.

Nothing of this project: not its installation, the reference, the checks, the editable-install
finder, nor site-packages as a folder (only the packages the worker's library folder links to).
"""

from __future__ import annotations

import csv
import email
import email.message
import importlib.metadata
import re
import sys
import sysconfig
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

_SYSTEM = ("/usr/lib", "/lib", "/lib64", "/usr/lib64", "/etc/ld.so.cache", "/dev/urandom", "/dev/zero", "/dev/null")
_CUDA = (
    "/dev/nvidiactl",
    "/dev/nvidia-uvm",
    "/dev/nvidia-uvm-tools",
    "/dev/nvidia0",
    "/proc/driver/nvidia",
    "/sys/devices",
    "/sys/bus/pci",
    "/sys/module/nvidia",
    "/usr/local/cuda",
    "/etc/nvidia",
)


class NotInstalled(RuntimeError):
    """A module the settings allow a submission to import is not installed here: the grader's failure (grading here
    would differ from grading where it is installed)."""


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def module_name(entry: str) -> str:
    """The top-level module a site-packages entry provides ("pylab.py", "_cffi_backend.cpython-311-....so": the part
    before the first dot); a distribution's metadata folder gives a name no import can ask for."""
    return entry.split(".")[0]


def _headers(dist: importlib.metadata.Distribution) -> email.message.Message:
    """The headers of a distribution's metadata, as ``dist.metadata`` has them, without parsing the description below
    them (most of the text, parsed twice per distribution there: ``metadata`` and ``requires``)."""
    text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or dist.read_text("") or ""
    return email.message_from_string(text.split("\n\n", 1)[0])


def _tops(dist: importlib.metadata.Distribution) -> set[str]:
    """The first part of every path a distribution installed, as ``dist.files`` gives them: read from its RECORD
    directly where it has one (``dist.files`` makes a path object of every line, 1.5 CPU-s for torch's and its
    requirements' 54,000 files, in every cold grading); the rare path that does not start with a plain name (absolute,
    ``./``) goes through ``PurePosixPath`` as there."""
    record = dist.read_text("RECORD")
    if record is None:  # an egg-info installation: dist.files reads its other lists
        return {file.parts[0] for file in dist.files or () if file.parts}
    tops = set()
    for line in record.splitlines():  # a line's path is before its first comma, unless it is quoted (csv's rule)
        path = next(csv.reader([line]), [""])[0] if line.startswith('"') else line.split(",", 1)[0]
        first = path.split("/", 1)[0]
        if first in ("", "."):
            parts = PurePosixPath(path).parts
            first = parts[0] if parts else ""
        if first:
            tops.add(first)
    return tops


def exposed(site: Path, allowed: Iterable[str]) -> set[str]:
    """The entries of ``site`` (site-packages) that belong to the distributions providing the ``allowed`` modules
    (torch always: the worker runs on it) and to everything those require, extras left out.

    Raises NotInstalled for an allowed module that neither the standard library nor ``site`` holds."""
    owners: dict[str, set[str]] = {}  # a distribution -> its entries in site-packages
    requires: dict[str, set[str]] = {}
    for dist in importlib.metadata.distributions(path=[str(site)]):
        headers = _headers(dist)
        name = _canonical(headers["Name"] or "")
        tops = {top for top in _tops(dist) if top not in ("..", "__pycache__")}
        owners.setdefault(name, set()).update(tops)
        for requirement in headers.get_all("Requires-Dist") or dist.requires or ():
            needed, _, marker = requirement.partition(";")
            found = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", needed.strip())
            if found and "extra" not in marker:
                requires.setdefault(name, set()).add(_canonical(found.group()))
    entries = {entry.name for entry in site.iterdir()}
    provided = {module_name(entry) for entry in entries} | sys.stdlib_module_names
    wanted = {"torch", *allowed}
    missing = sorted(wanted - provided)
    if missing:
        raise NotInstalled(
            f"[imports] allowed names {', '.join(missing)}, which is not installed here: install it, or take it out"
            " of the list (a submission graded here would score otherwise where it is installed)"
        )
    todo = [dist for dist, tops in owners.items() if any(module_name(top) in wanted for top in tops)]
    seen: set[str] = set()
    while todo:
        dist = todo.pop()
        if dist not in seen:
            seen.add(dist)
            todo += [needed for needed in requires.get(dist, ()) if needed in owners]
    return {top for dist in seen for top in owners[dist]} & entries


def readable(lib: Path, *, cuda: bool = False, packages: set[str] | None = None) -> list[str]:
    """Paths the worker is allowed to read, given its library folder (links to site-packages' entries): of those links,
    only the ones named in ``packages`` where it is given (``exposed``)."""
    paths = [str(lib)]
    paths += [
        str(link.resolve())
        for link in lib.iterdir()
        if link.is_symlink() and (packages is None or link.name in packages)
    ]
    site = Path(sysconfig.get_paths()["purelib"]).resolve()
    for stdlib in {Path(sysconfig.get_paths()[key]).resolve() for key in ("stdlib", "platstdlib")}:
        if stdlib not in site.parents:  # a virtual environment: this project is not installed under the stdlib
            paths.append(str(stdlib))
        else:  # installed beside the stdlib: every entry but the site-packages folder
            paths += [str(e) for e in stdlib.iterdir() if e.name not in ("site-packages", "dist-packages")]
    base_lib = Path(sys.base_prefix) / "lib"
    if base_lib.is_dir():  # libpython and the libraries Python was built with, not the stdlib folder above them
        paths += [str(entry) for entry in base_lib.iterdir() if entry.is_file()]
    paths += [path for path in _SYSTEM if Path(path).exists()]
    if cuda:
        paths += [path for path in _CUDA if Path(path).exists()]
    return paths


def writable(*, cuda: bool = False) -> list[str]:
    """Paths the worker may write besides its scratch folder: its private /dev/shm, /dev/null, the GPU's devices."""
    devices = [str(p) for p in Path("/dev").glob("nvidia*")] if cuda else []
    return ["/dev/shm", "/dev/null", *devices]
