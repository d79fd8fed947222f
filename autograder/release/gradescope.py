"""``sdpa-build --gradescope autograder.zip``: a Gradescope autograder bundle.

The zip holds, at its root, ``setup.sh`` and ``run_autograder`` (Gradescope's names) and a
wheel of this package. ``setup.sh`` installs torch (a CPU build unless built with
``--torch gpu``), then the wheel and what it depends on, into a virtual environment;
``run_autograder`` grades ``/autograder/submission`` and writes
``/autograder/results/results.json``. ``AUTOGRADER_ROOT`` moves ``/autograder`` elsewhere, for a test.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

CPU_INDEX = "https://download.pytorch.org/whl/cpu"
TORCH_BUILDS = ("cpu", "gpu")

SETUP = """#!/usr/bin/env bash
# Gradescope runs this once, when it builds the autograder image.
#
# torch comes first, so that installing the wheel keeps it:
#   SDPA_TORCH=cpu  a CPU build, from PyTorch's CPU wheel index (SDPA_TORCH_INDEX) when that index
#                   answers within a few seconds, otherwise from the default index
#   SDPA_TORCH=gpu  the default index's build (on Linux, a CUDA build), for a grader with a GPU
# The default was chosen by `sdpa-build --torch`; the environment overrides it.
set -euo pipefail
ROOT="${AUTOGRADER_ROOT:-/autograder}"
TORCH_BUILD="${SDPA_TORCH:-@BUILD@}"
TORCH_INDEX="${SDPA_TORCH_INDEX:-@INDEX@}"
TORCH='@TORCH@'
# a venv, with what Debian and Ubuntu images may lack (python3 itself, or ensurepip: python3-venv)
if ! python3 -m venv "$ROOT/venv" >/dev/null 2>&1; then
    apt-get update && apt-get install -y python3 python3-pip python3-venv
    rm -rf "$ROOT/venv"
    python3 -m venv "$ROOT/venv"
fi
PYTHON="$ROOT/venv/bin/python"
PIP=("$PYTHON" -m pip install --quiet --disable-pip-version-check)

reachable() {  # does the package index "$1" answer for torch within a few seconds?
    "$PYTHON" - "$1" <<'EOF'
import os, sys, urllib.parse, urllib.request
index = sys.argv[1].rstrip("/")
if urllib.parse.urlparse(index).scheme == "file":
    sys.exit(0 if os.path.isdir(urllib.request.url2pathname(urllib.parse.urlparse(index).path) + "/torch") else 1)
try:
    urllib.request.urlopen(index + "/torch/", timeout=5).close()
except Exception as error:  # noqa: BLE001 - any failure means: use the default index
    print(f"setup.sh: {index} cannot be reached ({error})", file=sys.stderr)
    sys.exit(1)
EOF
}

case "$TORCH_BUILD" in
    cpu)
        if reachable "$TORCH_INDEX"; then
            echo "setup.sh: installing $TORCH, CPU build, from $TORCH_INDEX"
            "${PIP[@]}" --index-url "$TORCH_INDEX" "$TORCH"
        else
            echo "setup.sh: installing $TORCH from the default index"
            "${PIP[@]}" "$TORCH"
        fi ;;
    gpu)
        echo "setup.sh: SDPA_TORCH=gpu: installing $TORCH from the default index"
        "${PIP[@]}" "$TORCH" ;;
    *)
        echo "setup.sh: Invalid SDPA_TORCH=$TORCH_BUILD: expected cpu or gpu" >&2
        exit 2 ;;
esac
"${PIP[@]}" "$ROOT/source/"sdpa_assignment-*.whl numpy
"$PYTHON" - "$TORCH_BUILD" <<'EOF'
import sys
import torch
cuda = torch.version.cuda
print(f"setup.sh: installed torch {torch.__version__}, " + (f"a CUDA {cuda} build" if cuda else "a CPU build"))
if sys.argv[1] == "cpu" and cuda:
    print("setup.sh: warning: the default index gave a CUDA build (several GB); "
          "set SDPA_TORCH_INDEX to a CPU wheel index this machine can reach", file=sys.stderr)
EOF
"""

RUN = (
    """#!/usr/bin/env bash
# Gradescope runs this for every submission; the results file is written whatever happens.
ROOT="${AUTOGRADER_ROOT:-/autograder}"
mkdir -p "$ROOT/results"
CONFIG=()
if [ -f "$ROOT/source/config.toml" ]; then CONFIG=(--config "$ROOT/source/config.toml"); fi
# the submission's time (and Gradescope's due dates), for the settings' [deadline] policy
if [ -f "$ROOT/submission_metadata.json" ]; then CONFIG+=(--metadata "$ROOT/submission_metadata.json"); fi
"$ROOT/venv/bin/sdpa-grade" grade "$ROOT/submission" --json "$ROOT/results/results.json" "${CONFIG[@]}"
status=$?
if [ ! -s "$ROOT/results/results.json" ]; then
    echo '{"score": 0, "output": "The autograder failed before it could grade your submission """
    """(your code is not to blame): ask your instructor to regrade it.", "tests": []}' \\
        > "$ROOT/results/results.json"
fi
exit $status
"""
)

# What the wheel is built from: the rest of the project folder (a build/ of an earlier build among it) stays out.
SOURCES = ("pyproject.toml", "README.md", "autograder", "reference")


def torch_requirement(root: Path) -> str:
    """The project's torch range, as pyproject.toml declares it (one place for the tested range)."""
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    torch = ("torch>", "torch=", "torch<", "torch~", "torch!")
    return next(dep for dep in project["dependencies"] if dep.replace(" ", "").startswith(torch))


def setup_script(root: Path, torch_build: str = "cpu") -> str:
    """setup.sh, with the torch range and the default build filled in."""
    if torch_build not in TORCH_BUILDS:
        raise ValueError(f"Invalid torch build {torch_build!r}: expected one of {', '.join(TORCH_BUILDS)}")
    return (
        SETUP.replace("@BUILD@", torch_build).replace("@INDEX@", CPU_INDEX).replace("@TORCH@", torch_requirement(root))
    )


def build_wheel(root: Path, folder: Path) -> Path:
    """Build this project's wheel into ``folder``, from a clean copy of its sources, with the build tools here."""
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / "project"
        for name in SOURCES:
            source = root / name
            if source.is_dir():
                shutil.copytree(source, copy / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            else:
                copy.mkdir(parents=True, exist_ok=True)
                shutil.copy(source, copy / name)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "--no-deps",
                "--no-build-isolation",
                "-q",
                "-w",
                str(folder),
                str(copy),
            ],
            check=True,
            capture_output=True,
        )
    return next(folder.glob("sdpa_assignment-*.whl"))


def write_bundle(root: Path, target: Path, config: Path | None = None, torch_build: str = "cpu") -> None:
    """Write the Gradescope zip: setup.sh, run_autograder, the wheel, and the instructor's config if given."""
    setup = setup_script(root, torch_build)
    with tempfile.TemporaryDirectory() as folder:
        wheel = build_wheel(root, Path(folder))
        target.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as bundle:
            for name, text in (("setup.sh", setup), ("run_autograder", RUN)):
                info = zipfile.ZipInfo(name)
                info.external_attr = 0o755 << 16  # executable, as Gradescope expects
                bundle.writestr(info, text)
            bundle.write(wheel, wheel.name)
            if config is not None:
                bundle.write(config, "config.toml")
