"""How a graded cell looks in the autograded notebook and in nbgrader's feedback: the check's message, nothing else.

nbgrader scores a test cell 0 when its outputs hold an error, and its feedback page shows an
error's ``traceback`` lines. A failed hidden check's output is such an error whose lines are the
check's name and its wrapped feedback: no traceback into the grader, no file of it. A check's
feedback is worded from its fields (autograder/render/text.py), its likely cause on a line of its own.
"""

from __future__ import annotations

import html
import textwrap
from typing import TYPE_CHECKING

from nbformat import NotebookNode
from nbformat.v4 import new_output

from autograder.render.text import output_text, paragraphs
from autograder.status import Verdict, verdict

if TYPE_CHECKING:  # scoring imports pytest and torch: the nbgrader front end imports them only to grade
    from autograder.scoring import Scored

WIDTH = 88  # feedback HTML shows error output in <pre>: lines longer than this run off the page
NOT_YET = "(not awarded yet)"  # after "withheld", where the check's score is 0 for now


def failure_output(title: str, feedback: str | Scored) -> NotebookNode:
    """An error output (nbgrader's 0 points) showing ``title``: failed, then the feedback, fit for the student:
    a scored check's (worded from its fields), or a question's message."""
    if isinstance(feedback, str):
        message, shown = feedback, feedback.splitlines()
    else:
        message, shown = output_text(feedback), paragraphs(feedback)
    return new_output("error", ename="HiddenCheckFailed", evalue=f"{title}: {message}", traceback=lines(title, shown))


def verdict_outputs(title: str, feedback: str | Scored) -> list[NotebookNode]:
    """A hidden cell's outputs for a check that did not pass (status.verdict): a failure's error output; for a check
    that kept its points by error carried forward, a note headed "kept its points" (no error: nbgrader's full
    points); or, for a withheld check (not awarded until its function passes its own checks), a note headed
    "withheld" and nbgrader's partial credit 0 (an ``execute_result``), so that nbgrader scores it 0 without painting
    it an error, its shown score saying why it is 0 (its ``text/plain`` stays the 0 nbgrader reads)."""
    if isinstance(feedback, str):
        return [failure_output(title, feedback)]
    found = verdict(feedback)
    if found == Verdict.CARRIED:
        return [note_output("\n".join(lines(title, paragraphs(feedback), word=found.shown)))]
    if found != Verdict.WITHHELD:
        return [failure_output(title, feedback)]
    note = note_output("\n".join(lines(title, paragraphs(feedback), word=f"{found.shown} {NOT_YET}")))
    shown = f"<pre>0 points for now: {html.escape(output_text(feedback))}</pre>"
    return [note, new_output("execute_result", data={"text/plain": "0", "text/html": shown}, execution_count=None)]


def note_output(text: str) -> NotebookNode:
    """A plain note under a cell (no error: nbgrader's full points, 0 for a public test cell)."""
    return new_output("stream", name="stdout", text=text + "\n")


def lines(title: str, shown: list[str], width: int = WIDTH, word: str = Verdict.FAILED.shown) -> list[str]:
    """The title and its verdict in words (``word``), then each of the feedback's lines, wrapped to ``width``."""
    out = [f"{title}: {word}"]
    for paragraph in shown:
        if len(paragraph) + 2 <= width:  # kept as it is: a picture's rows keep their alignment
            out.append(f"  {paragraph}")
        else:
            out += textwrap.wrap(paragraph, width, initial_indent="  ", subsequent_indent="    ")
    return out
