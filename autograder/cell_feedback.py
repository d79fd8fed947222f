"""How a graded cell looks in the autograded notebook and in nbgrader's feedback: the check's message, nothing else.

nbgrader scores a test cell 0 when its outputs hold an error, and its feedback page shows an
error's ``traceback`` lines. A failed hidden check's output is such an error whose lines are the
check's name and its wrapped feedback: no traceback into the grader, no file of it.
"""

from __future__ import annotations

import textwrap

from nbformat import NotebookNode
from nbformat.v4 import new_output

WIDTH = 88  # feedback HTML shows error output in <pre>: lines longer than this run off the page


def failure_output(title: str, message: str) -> NotebookNode:
    """An error output (nbgrader's 0 points) showing ``title``: failed, then ``message``, fit for the student."""
    return new_output("error", ename="HiddenCheckFailed", evalue=f"{title}: {message}", traceback=lines(title, message))


def note_output(text: str) -> NotebookNode:
    """A plain note under a cell (no error: nbgrader's full points, 0 for a public test cell)."""
    return new_output("stream", name="stdout", text=text + "\n")


def lines(title: str, message: str, width: int = WIDTH) -> list[str]:
    """The title, then the message wrapped to ``width``, its "Likely cause" on a line of its own."""
    out = [f"{title}: failed"]
    for paragraph in message.replace(" Likely cause: ", "\nLikely cause: ").splitlines():
        if len(paragraph) + 2 <= width:  # kept as it is: a picture's rows keep their alignment
            out.append(f"  {paragraph}")
        else:
            out += textwrap.wrap(paragraph, width, initial_indent="  ", subsequent_indent="    ")
    return out
