"""Reading a submission's file with its bounds checked first: its size before it is read, a JSON text's nesting
before it is decoded, and the decoded notebook's cells by shape and type before anything walks them.

Every refusal is ``Refused``, whose message says, in the student's words, which bound the file crossed;
``submission.py`` turns it into that submission's ``Ungradable``. Nothing here catches a RecursionError or a
MemoryError after the fact: the bounds are checked before the work that would raise them.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

# The characters that decide a JSON text's nesting: a bracket, and a quote or backslash (strings, escapes). One
# character a match: the scan below visits each at most once, whatever the text (no pattern that can backtrack).
_SIGNIFICANT = re.compile(r'[\[\]{}"\\]')


class Refused(ValueError):
    """The file crosses one of its bounds, or is not the shape it must be; the message says which, for the student."""


def sized(size: int) -> str:
    """``size`` bytes in the unit a student reads: 812 bytes, 40 KiB, 4.0 MiB."""
    if size < 1 << 10:
        return f"{size} bytes"
    if size < 1 << 20:
        return f"{size >> 10} KiB"
    return f"{size / (1 << 20):.1f} MiB"


def read_bytes(path: Path, max_bytes: int, too_large: str) -> bytes:
    """The file's bytes, refused by its size before it is read (and read no further than the bound); raises OSError
    as ``Path.read_bytes`` does.

    Only a regular file is read: it is opened without following a last symbolic link and without waiting (a named
    pipe, a device or a socket would block the reader or never end), and refused by what the open file is."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(path, flags)
    with open(fd, "rb", closefd=True) as handle:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise Refused(f"is not a regular file (a {_file_kind(mode)}); submit the file itself")
        size = os.fstat(fd).st_size
        if size > max_bytes:
            raise Refused(f"is {sized(size)}; {too_large}")
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise Refused(f"is over {sized(max_bytes)}; {too_large}")
    return data


def _file_kind(mode: int) -> str:
    kinds = ((stat.S_ISFIFO, "named pipe"), (stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device"),
             (stat.S_ISSOCK, "socket"), (stat.S_ISDIR, "folder"))  # fmt: skip
    return next((word for test, word in kinds if test(mode)), "special file")


def nesting(text: str, max_depth: int, max_containers: int) -> tuple[int, int]:
    """How deep lists and objects nest in a JSON text, and how many there are, counted without decoding it
    (brackets inside strings skipped); the count stops once either passes its bound.

    One pass over the text's brackets, quotes and backslashes, in linear time whatever the text holds (an
    unterminated string of escaped quotes included): a backslash in a string escapes the character after it."""
    depth = deepest = containers = 0
    in_string = False
    escaped_at = -1  # the position of the character a backslash escapes
    for found in _SIGNIFICANT.finditer(text):
        at, character = found.start(), found.group()
        if at == escaped_at:
            continue
        if in_string:
            if character == "\\":
                escaped_at = at + 1
            elif character == '"':
                in_string = False
        elif character == '"':
            in_string = True
        elif character in "[{":
            depth += 1
            containers += 1
            deepest = max(deepest, depth)
            if deepest > max_depth or containers > max_containers:
                break
        elif character in "]}":
            depth -= 1
    return deepest, containers


# What a notebook's cells hold that the grader never reads: what a run printed or drew (``outputs``), and the images
# pasted into a markdown cell (``attachments``). Each is dropped from the text before anything decodes it.
DROPPED_KEYS = ('"outputs"', '"attachments"')


# A JSON string's rest after its opening quote, to its closing quote: one pass, in C (plain characters, then each
# escape followed by plain characters; the parts never overlap, so nothing backtracks). A bracket, or a run of opening
# or of closing brackets.
_STRING_REST = re.compile(r'[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_STRUCTURE = re.compile(r'"|[\[{]+|[\]}]+')
_STRUCTURE_KEPT = re.compile(r'"|[\[{]|[\]}]+')  # outside what is dropped, an opening bracket one at a time


def without_outputs(text: str, max_containers: int) -> tuple[str, int]:
    """The notebook's JSON text with each cell's outputs and attachments emptied (``[]``, ``{}``), and how many
    characters were dropped; nothing is decoded.

    One pass over the text (linear, whatever it holds): each string is skipped by one match, each run of brackets
    counted at once; a list or object that is the value of the key ``"outputs"`` or ``"attachments"`` of an object in
    the top-level ``"cells"`` list is skipped to its closing bracket, only a count kept, however deep it nests. Their
    size never counts; the lists and objects they hold are counted against ``max_containers`` (an output holds a few;
    past it the notebook is refused, so that no shape of output makes the scan slow). Text that is not JSON is left
    for ``load_json`` to refuse."""
    kept: list[str] = []
    copied = 0  # text[:copied] is in kept, or dropped
    depth = dropped_containers = kept_containers = 0
    keys: list[str] = []  # the key each open container down to a cell is the value of ("" for none)
    string_at = string_end = -1  # where the last string started and ended
    skipping_from, skip_depth = -1, 0  # where the skipped value starts, and the depth it is at
    at = 0
    while (found := (_STRUCTURE if skipping_from >= 0 else _STRUCTURE_KEPT).search(text, at)) is not None:
        at, run = found.start(), found.group()
        if run == '"':
            rest = _STRING_REST.match(text, at + 1)
            if rest is None:
                break  # an unterminated string: not JSON
            string_at, string_end, at = at, rest.end() - 1, rest.end()
            continue
        if run[0] in "[{":
            if skipping_from >= 0:
                depth += len(run)
                dropped_containers += len(run)
                if dropped_containers > max_containers:
                    raise Refused(
                        f"holds more than {max_containers} JSON lists and objects in its cells' outputs: clear them"
                        " (Jupyter: Edit > Clear Outputs of All Cells) and save it again"
                    )
                at = found.end()
                continue
            depth += 1  # outside what is dropped: the key before the bracket decides
            kept_containers += 1
            if kept_containers > max_containers:
                break  # load_json counts them again, and refuses the notebook
            key = ""
            if 0 <= string_at < string_end < at <= string_end + 64 and text[string_end + 1 : at].strip() == ":":
                key = text[string_at : string_end + 1] if string_end - string_at < 16 else ""
            if depth == 4 and key in DROPPED_KEYS and keys[:2] == ["", '"cells"']:
                skipping_from, skip_depth = at, depth
            elif depth <= 3:
                keys[depth - 1 :] = [key]
            at = found.end()
            continue
        if skipping_from >= 0 and depth - len(run) < skip_depth:
            closed_at = at + depth - skip_depth  # the bracket that closes the dropped value
            kept += [text[copied:skipping_from], "[]" if text[skipping_from] == "[" else "{}"]
            copied, skipping_from = closed_at + 1, -1
        depth -= len(run)
        at = found.end()
    if skipping_from >= 0:  # never closed: what is kept is not JSON, and load_json refuses it
        kept.append(text[copied:skipping_from])
        copied = len(text)
    if not kept:
        return text, 0
    kept.append(text[copied:])
    joined = "".join(kept)
    return joined, len(text) - len(joined)


def load_notebook(text: str, max_bytes: int, max_depth: int, max_containers: int):
    """The decoded notebook, its outputs and attachments dropped first (``without_outputs``): what is left is bounded
    by ``max_bytes`` (UTF-8), then read by ``load_json``'s bounds. What the student's runs printed never counts
    against a bound; the code, the markdown and the metadata do."""
    kept, dropped = without_outputs(text, max_containers)
    size = len(kept.encode("utf-8"))
    if size > max_bytes:
        outputs = f" besides its outputs ({sized(dropped)}, not counted)" if dropped else ""
        raise Refused(
            f"holds {sized(size)}{outputs}; at most {sized(max_bytes)} of a notebook's cells is read: remove the data"
            " (or anything large) from its cells"
        )
    return load_json(kept, max_depth, max_containers)


def load_json(text: str, max_depth: int, max_containers: int):
    """The decoded JSON text, its nesting and its number of lists and objects checked before ``json.loads`` runs
    (so that its recursion never runs out, and what it builds is bounded by more than the text's size)."""
    depth, containers = nesting(text, max_depth, max_containers)
    if depth > max_depth:
        raise Refused(f"nests more than {max_depth} levels deep (a notebook Jupyter saves nests about 5)")
    if containers > max_containers:
        raise Refused(f"holds more than {max_containers} JSON lists and objects (a notebook's cells hold a few each)")
    try:
        return json.loads(text)
    except ValueError:
        raise Refused("is not valid .ipynb JSON") from None


def _kind(value) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "a list", str: "a string", bool: "true or false"}.get(
        type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__
    )


def notebook_cells(notebook) -> list[dict]:
    """The cells of a decoded notebook, each checked for the shape nbformat gives it: an object whose
    ``cell_type`` is a string, whose ``metadata`` (and its ``nbgrader``) is an object, and whose ``source`` is a
    string or a list of strings. The first cell that is not is refused by its number (1 = the first)."""
    if not isinstance(notebook, dict):
        raise Refused(f"is {_kind(notebook)}, not a notebook (a JSON object with a list of cells)")
    cells = notebook.get("cells")
    if not isinstance(cells, list):
        raise Refused(f"is not a notebook: its cells are not a list ({_kind(cells)})")
    for number, cell in enumerate(cells, 1):
        problem = cell_problem(cell)
        if problem:
            raise Refused(f"has a malformed cell: cell {number} {problem} (save the notebook again from Jupyter)")
    return cells


def cell_problem(cell) -> str:
    """'' for a cell of nbformat's shape; else what is wrong with it, as the rest of a sentence about the cell."""
    if not isinstance(cell, dict):
        return f"is {_kind(cell)}, not an object"
    if not isinstance(cell.get("cell_type"), str):
        return f"has a cell_type that is {_kind(cell.get('cell_type'))}, not a string"
    metadata = cell.get("metadata", {})
    if not isinstance(metadata, dict):
        return f"has metadata that is {_kind(metadata)}, not an object"
    if not isinstance(metadata.get("nbgrader", {}), dict):
        return f"has nbgrader metadata that is {_kind(metadata['nbgrader'])}, not an object"
    source = cell.get("source", "")
    if isinstance(source, list):
        wrong = [line for line in source if not isinstance(line, str)]
        if wrong:
            return f"has a source line that is {_kind(wrong[0])}, not a string"
    elif not isinstance(source, str):
        return f"has a source that is {_kind(source)}, not a string or a list of strings"
    return ""
