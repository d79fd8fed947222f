"""How a failed hidden cell looks in the notebook and in nbgrader's feedback: the check's message, nothing else.

IPython shows an exception through its ``_render_traceback_`` method when it has one, so a
hidden cell that fails shows these lines instead of a traceback into the grader's own files.
"""

from __future__ import annotations

import textwrap

WIDTH = 88  # feedback HTML shows error output in <pre>: lines longer than this run off the page


class HiddenCheckFailed(AssertionError):
    """A hidden check (or a knowledge-check answer) failed; nbgrader gives the cell 0 points.

    ``title`` names what was checked; the message is the feedback, already fit for the student.
    """

    def __init__(self, title: str, message: str) -> None:
        super().__init__(f"{title}: {message}")
        self.title = title
        self.message = message

    def _render_traceback_(self) -> list[str]:
        return lines(self.title, self.message)


def lines(title: str, message: str, width: int = WIDTH) -> list[str]:
    """The title, then the message wrapped to ``width``, its "Likely cause" on a line of its own."""
    out = [f"{title}: failed"]
    for paragraph in message.replace(" Likely cause: ", "\nLikely cause: ").splitlines():
        if len(paragraph) + 2 <= width:  # kept as it is: a picture's rows keep their alignment
            out.append(f"  {paragraph}")
        else:
            out += textwrap.wrap(paragraph, width, initial_indent="  ", subsequent_indent="    ")
    return out
