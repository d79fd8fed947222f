"""The assignment's optional parts: functions of the reference handed out and graded only where the settings' [parts]
turn them on (config.Parts).

A part is one function, written as any other (its reference body, its check file, its handout section: docs/
extending.md); its key in [parts] is the function's name. With the part off, the build leaves its function out of
the reference it derives the stubs, the notebook and the student's conftest from, and its sections out of the handout
(``without``, ``handout_without``), and the grader runs none of its checks and counts none of their points
(config.load_settings, plugin.GradingPlugin).
"""

from __future__ import annotations

import ast
from collections.abc import Collection

FUNCTION_MARKER = "<!-- function:"  # the line under a handout heading that names the function its section teaches


def without(source: str, off: Collection[str]) -> str:
    """The reference's source without the top-level definitions named in ``off``, each with the blank lines that
    separated it from the next (the file reads as if it had never held them)."""
    if not off:
        return source
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    dropped: set[int] = set()  # 0-based line numbers
    for index, node in enumerate(tree.body):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in off:
            start = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1
            if index + 1 < len(tree.body):  # up to the next statement: past the closing "### END SOLUTION" comment
                following = tree.body[index + 1]
                end = min([following.lineno] + [d.lineno for d in getattr(following, "decorator_list", [])]) - 1
            else:  # the last definition: it goes with the blank lines before it
                end = len(lines)
                while start > 0 and not lines[start - 1].strip():
                    start -= 1
            dropped.update(range(start, end))
    kept = "".join(line for number, line in enumerate(lines) if number not in dropped)
    return kept.rstrip("\n") + "\n"  # several definitions dropped at the end leave the blank lines before the first


def teaches(block: str) -> str | None:
    """The function a handout section (its heading line, then its body) teaches: its marker line's, else None."""
    _, _, body = block.partition("\n")
    marker = body.partition("\n")[0].strip()
    if marker.startswith(FUNCTION_MARKER) and marker.endswith("-->"):
        return marker.removeprefix(FUNCTION_MARKER).removesuffix("-->").strip()
    return None


def handout_without(text: str, off: Collection[str]) -> str:
    """The handout without the '## ' sections that teach a function named in ``off``."""
    if not off:
        return text
    head, *blocks = text.split("\n## ")
    kept = "\n## ".join([head, *(block for block in blocks if teaches(block) not in off)])
    return kept.rstrip("\n") + "\n" if text.endswith("\n") else kept
