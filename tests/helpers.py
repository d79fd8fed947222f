"""Paths and small helpers shared by the project's tests."""

from __future__ import annotations

import csv
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "reference" / "attention.py"
TEMPLATE_DIR = ROOT / "student_template"
SUBMISSIONS = Path(__file__).resolve().parent / "submissions"
BIN = Path(sys.executable).parent


def student_folder(tmp_path: Path, attention_source: str | None = None) -> Path:
    """A copy of student_template/ alone, optionally with attention.py replaced."""
    folder = tmp_path / "student"
    shutil.copytree(TEMPLATE_DIR, folder, ignore=shutil.ignore_patterns("__pycache__"))
    if attention_source is not None:
        (folder / "attention.py").write_text(attention_source)
    return folder


def run(args: list[str], cwd: Path | None = None, timeout: float = 300, **kwargs) -> subprocess.CompletedProcess:
    """Run a real command, capturing its text output."""
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout, **kwargs)


def limits(**changes) -> dict:
    """The default [limits] as the sandbox takes them (plain values), with ``changes``."""
    import dataclasses

    from autograder.config import load_settings

    return {**dataclasses.asdict(load_settings(environ={}).limits), **changes}


def csv_rows(path: Path) -> list[list[str]]:
    """A class CSV's rows less its graded_at column: when each student was graded differs from run to run; every
    other cell (scores, late fields, digests) may not."""
    with open(path, newline="") as handle:
        rows = list(csv.reader(handle))
    if not rows or "graded_at" not in rows[0]:
        return rows
    column = rows[0].index("graded_at")
    return [row[:column] + row[column + 1 :] for row in rows]


def points(check: str) -> float:
    """A hidden check's points under the default settings: its marker's, or the override in defaults.toml."""
    from autograder.config import load_settings

    return load_settings(environ={}).points[check]


def total(*, gpu: bool = False) -> float:
    """The most a submission scores under the default settings: every hidden check's points, timing_gpu's only where
    it runs (without a GPU it is not run, worth 0 of 0 under ``when_no_gpu = "exclude"``; ``award`` counts it)."""
    from autograder.config import load_settings

    return sum(value for check, value in load_settings(environ={}).points.items() if gpu or check != "timing_gpu")
