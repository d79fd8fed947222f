"""Student text made inert wherever a person reads it: a terminal, a CSV cell, an HTML page.

A student's exception message reaches the feedback; with ANSI escapes in it, it once forged
"total 55/55" in the instructor's terminal, hid real rows, set the window title and wrote the
clipboard. Every character that is not printable (control characters, escape sequences'
ESC, bidirectional overrides, line and paragraph separators) is shown as its escape instead
(``\\x1b``, ``\\u202e``). Results' JSON keeps the text as it was, escaped as JSON.
"""

from __future__ import annotations

import os


def inert(text: str, keep_newlines: bool = True) -> str:
    """``text`` with every character that is not printable written as its Python escape (newlines kept, if asked)."""
    return "".join(c if c.isprintable() or (keep_newlines and c == "\n") else _escape(c) for c in str(text))


def shown(name: str) -> str:
    """A name as a person reads it (terminal, CSV, pages): undecodable bytes, control characters (ANSI escapes)
    and bidirectional overrides (U+202E) as their escapes, on one line."""
    return inert(os.fsencode(name).decode("utf-8", "backslashreplace"), keep_newlines=False)


def _escape(character: str) -> str:
    code = ord(character)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def csv_cell(text: str) -> str:
    """A CSV cell a spreadsheet will not run as a formula (OWASP's advice: a leading quote), with no control
    characters."""
    quoted = f"'{text}" if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text
    return inert(quoted, keep_newlines=False)
