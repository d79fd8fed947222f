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


def _head(dist: importlib.metadata.Distribution) -> str:
    """A distribution's metadata up to its description: the headers."""
    text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or dist.read_text("") or ""
    return text.split("\n\n", 1)[0]


def _headers(dist: importlib.metadata.Distribution) -> email.message.Message:
    """The headers of a distribution's metadata, as ``dist.metadata`` has them, without parsing the description below
    them (most of the text, parsed twice per distribution there: ``metadata`` and ``requires``)."""
    return email.message_from_string(_head(dist))


_NAME = re.compile(r"^name:[ \t]*([^\r\n]*)", re.M | re.I)


def _name(dist: importlib.metadata.Distribution) -> str:
    """A distribution's name, as ``dist.metadata["Name"]`` has it ("" for none), from its headers' Name line alone
    (parsing every distribution's headers cost a cold grading 0.05 CPU-s)."""
    found = _NAME.search(_head(dist))
    return found.group(1).strip() if found else ""


# the first path part of each RECORD line that starts with a plain name (nearly all of them), found in one pass
_FIRST = re.compile(r'\n([^"\r\n,/][^\r\n,/]*)')
# the other lines: a quoted path (csv's rule), an absolute one, or one from ``./``
_ODD = re.compile(r'\n((?:"|/|\./)[^\n]*)')


def _tops(dist: importlib.metadata.Distribution) -> set[str]:
    """The first part of every path a distribution installed, as ``dist.files`` gives them: read from its RECORD
    directly where it has one (``dist.files`` makes a path object of every line, 1.5 CPU-s for torch's and its
    requirements' 54,000 files, in every cold grading), the plain lines by one regular expression; the rare path
    that is quoted or does not start with a plain name (absolute, ``./``) goes through ``csv`` and
    ``PurePosixPath`` as there."""
    return _tops_of(dist, dist.read_text("RECORD"))


def _tops_of(dist: importlib.metadata.Distribution, record: str | None) -> set[str]:
    """``_tops`` of a distribution whose RECORD (None: it has none) is read already."""
    if record is None:  # an egg-info installation: dist.files reads its other lists
        return {file.parts[0] for file in dist.files or () if file.parts}
    record = "\n" + record  # every line starts after a newline: the expressions look for one, not for ^ anywhere
    tops = set(_FIRST.findall(record)) - {"."}
    for line in _ODD.findall(record):
        path = next(csv.reader([line]), [""])[0] if line.startswith('"') else line.split(",", 1)[0]
        parts = PurePosixPath(path).parts
        if parts:
            tops.add(parts[0])
    return tops


def _requirements(dists: list[importlib.metadata.Distribution]) -> set[str]:
    """The distributions that those of one name require, extras left out."""
    required = set()
    for dist in dists:
        for requirement in _headers(dist).get_all("Requires-Dist") or dist.requires or ():
            needed, _, marker = requirement.partition(";")
            name = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", needed.strip())
            if name and "extra" not in marker:
                required.add(_canonical(name.group()))
    return required


def exposed(site: Path, allowed: Iterable[str]) -> set[str]:
    """The entries of ``site`` (site-packages) that belong to the distributions providing the ``allowed`` modules
    (torch always: the worker runs on it) and to everything those require, extras left out.

    Only those distributions' files and requirements are read in full: another one can own a wanted module only if
    its RECORD names it (a cold grading read all 127 installed here, 0.15 CPU-s).
    Raises NotInstalled for an allowed module that neither the standard library nor ``site`` holds."""
    entries = {entry.name for entry in site.iterdir()}
    provided = {module_name(entry) for entry in entries} | sys.stdlib_module_names
    wanted = {"torch", *allowed}
    missing = sorted(wanted - provided)
    if missing:
        raise NotInstalled(
            f"[imports] allowed names {', '.join(missing)}, which is not installed here: install it, or take it out"
            " of the list (a submission graded here would score otherwise where it is installed)"
        )
    found: dict[str, list[importlib.metadata.Distribution]] = {}  # a distribution's name -> those installed
    records: dict[importlib.metadata.Distribution, str | None] = {}  # each one's RECORD, read once
    for dist in importlib.metadata.distributions(path=[str(site)]):
        found.setdefault(_canonical(_name(dist)), []).append(dist)
        records[dist] = dist.read_text("RECORD")
    owners: dict[str, set[str]] = {}  # a distribution -> its entries in site-packages, once read

    def entries_of(name: str) -> set[str]:
        if name not in owners:
            tops = {top for dist in found[name] for top in _tops_of(dist, records[dist])}
            owners[name] = tops - {"..", "__pycache__"}
        return owners[name]

    def may_own(name: str) -> bool:
        mine = [records[dist] for dist in found[name]]
        return any(record is None or any(module in record for module in wanted) for record in mine)

    todo = [name for name in found if may_own(name) and any(module_name(top) in wanted for top in entries_of(name))]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo += [needed for needed in _requirements(found[name]) if needed in found]
    return {top for name in seen for top in entries_of(name)} & entries


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
