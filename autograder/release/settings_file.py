"""defaults.toml's comments, written from the settings' declarations (autograder/config.py): one direction only.

Each key's help, and a section's ``ABOUT``, is declared once, beside its type and bounds; ``sdpa-build`` writes
them above the keys as comments, and ``sdpa-build --check`` fails when the file says anything else. The values stay
the file's own (it is the defaults an instructor copies). [points] and [deadline], whose keys are declared elsewhere
(the checks, deadline.py), and the file's opening lines are kept as they are.
"""

from __future__ import annotations

import dataclasses
import re
import textwrap
from pathlib import Path

DEFAULTS = Path("autograder/defaults.toml")
WIDTH = 120
HEADER = re.compile(r"^\[([^\]]+)\]\s*$")


def comment(text: str) -> str:
    """``text`` as TOML comment lines, wrapped to the project's line length."""
    lines = textwrap.wrap(text, WIDTH - 2, break_long_words=False, break_on_hyphens=False)
    return "".join(f"# {line}\n" for line in lines)


def _blocks(text: str) -> list[tuple[str | None, list[str]]]:
    """The file as (section, its lines from the header on), the lines before the first header under None."""
    blocks: list[tuple[str | None, list[str]]] = [(None, [])]
    for line in text.splitlines(keepends=True):
        header = HEADER.match(line)
        if header:
            blocks.append((header.group(1), []))
        blocks[-1][1].append(line)
    return blocks


def _section(name: str, declared: type, lines: list[str]) -> str:
    """One declared section: its header, its ABOUT, and each key's help above the key's line as the file has it."""
    values = {}
    for line in lines[1:]:
        key = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)\s*=", line)
        if key:
            values[key.group(1)] = line
    out = lines[0] + (comment(declared.ABOUT) if getattr(declared, "ABOUT", "") else "")
    for field in dataclasses.fields(declared):
        if field.metadata.get("table"):  # [tolerance.<check>]: a course's own tables, none in the defaults
            continue
        if field.name not in values:
            raise ValueError(f"{DEFAULTS} has no value for [{name}] {field.name}: add `{field.name} = ...` to it")
        out += comment(field.metadata["help"]) + values[field.name]
    trailing = "".join(lines).endswith("\n\n")
    return out + ("\n" if trailing else "")


def build_defaults(root: Path) -> str:
    """defaults.toml with every declared key's comment written from its declaration."""
    from autograder.config import SECTIONS

    text = (root / DEFAULTS).read_text()
    return "".join(
        _section(name, SECTIONS[name], lines) if name in SECTIONS else "".join(lines) for name, lines in _blocks(text)
    )
