"""What a sandboxed worker may read: Python's standard library, torch and its dependencies, system libraries.

Nothing of this project: not its installation, the reference, the checks, the editable-install
finder, nor site-packages as a folder (only the packages the worker's library folder links to).
"""

from __future__ import annotations

import sys
import sysconfig
from pathlib import Path

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


def readable(lib: Path, *, cuda: bool = False) -> list[str]:
    """Paths the worker is allowed to read, given its library folder (links to site-packages' entries)."""
    paths = [str(lib)]
    paths += [str(link.resolve()) for link in lib.iterdir() if link.is_symlink()]
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
