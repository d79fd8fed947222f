"""``sdpa-build --gradescope autograder.zip``: a Gradescope autograder bundle.

The zip holds, at its root, ``setup.sh`` and ``run_autograder`` (Gradescope's names) and a
wheel of this package. ``setup.sh`` installs the wheel (and, from the package index, what it
depends on) into a virtual environment; ``run_autograder`` grades ``/autograder/submission``
and writes ``/autograder/results/results.json``. ``AUTOGRADER_ROOT`` moves ``/autograder``
elsewhere, for a test.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

SETUP = """#!/usr/bin/env bash
# Gradescope runs this once, when it builds the autograder image.
set -euo pipefail
ROOT="${AUTOGRADER_ROOT:-/autograder}"
if ! command -v python3 >/dev/null || ! python3 -m venv --help >/dev/null 2>&1; then
    apt-get update && apt-get install -y python3 python3-pip python3-venv
fi
python3 -m venv "$ROOT/venv"
"$ROOT/venv/bin/pip" install --upgrade pip
"$ROOT/venv/bin/pip" install "$ROOT/source/"sdpa_assignment-*.whl numpy
"""

RUN = """#!/usr/bin/env bash
# Gradescope runs this for every submission; the results file is written whatever happens.
ROOT="${AUTOGRADER_ROOT:-/autograder}"
GRADE="${SDPA_GRADE:-$ROOT/venv/bin/sdpa-grade}"
mkdir -p "$ROOT/results"
CONFIG=()
if [ -f "$ROOT/source/config.toml" ]; then CONFIG=(--config "$ROOT/source/config.toml"); fi
"$GRADE" "$ROOT/submission" --json "$ROOT/results/results.json" "${CONFIG[@]}"
status=$?
if [ ! -s "$ROOT/results/results.json" ]; then
    echo '{"score": 0, "output": "The autograder failed before it could grade; your instructor has been told.", "tests": []}' \\
        > "$ROOT/results/results.json"
fi
exit $status
"""


def _wheel(root: Path, folder: Path) -> Path:
    """Build this project's wheel into ``folder``, with the build tools already installed here."""
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(folder), str(root)],
        check=True,
        capture_output=True,
    )
    return next(folder.glob("sdpa_assignment-*.whl"))


def write_bundle(root: Path, target: Path, config: Path | None = None) -> None:
    """Write the Gradescope zip: setup.sh, run_autograder, the wheel, and the instructor's config if given."""
    with tempfile.TemporaryDirectory() as folder:
        wheel = _wheel(root, Path(folder))
        target.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as bundle:
            for name, text in (("setup.sh", SETUP), ("run_autograder", RUN)):
                info = zipfile.ZipInfo(name)
                info.external_attr = 0o755 << 16  # executable, as Gradescope expects
                bundle.writestr(info, text)
            bundle.write(wheel, wheel.name)
            if config is not None:
                bundle.write(config, "config.toml")
