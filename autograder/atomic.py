"""Results files are written whole or not at all: a temporary file in the same folder, then ``os.replace``.

A reader (a later batch, a merge, Gradescope) sees the old file or the new one, never half of one, and a
grading that fails or is stopped leaves the old file as it was.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole: flushed to disk under a temporary name, then renamed over ``path``."""
    # a name no other grader can have: shards on other machines may share the folder (and a PID)
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    try:
        with open(temporary, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)  # a write that failed (a full disk, Ctrl-C) leaves nothing behind
