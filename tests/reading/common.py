"""What the reading tests share that is not a fixture."""

from __future__ import annotations

from pathlib import Path


def put(folder: Path, files: dict[str, str]) -> Path:
    """``folder`` holding ``files`` (path relative to ``folder`` -> text), folders made as needed."""
    for relative, text in files.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return folder
