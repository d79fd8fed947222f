"""The lesson's shapes ([lesson] in the settings) in what students receive, as ``sdpa-build`` writes them.

The sources are written with the shipped defaults' shapes, so that they read as they are on GitHub: the handout
(docs/handout.md), the hidden checks' docstrings and the knowledge check's questions (checks/quiz.py, which asks
them with any lesson's). ``sdpa-build`` writes each of the defaults' shapes found in them, written as a tuple such
as ``(32, 50, 64)``, as the same shape of the lesson it builds with (``render``), into the handout beside the stubs
and into the notebook. The public tests, which students receive as they are committed, take the lesson's sizes from
one line of their own (``LESSON_LINE``), which ``sdpa-build`` writes, whatever sizes it held before
(``render_public_tests``). With the default settings every file is written as it was.
"""

from __future__ import annotations

import json
import re

from autograder.config import Lesson

# the public tests' one line that holds the lesson's sizes, inside their test of the lesson's question
LESSON_LINE = re.compile(r"^(?P<indent>[ ]*)B, T, d_k, d_v = \d+, \d+, \d+, \d+(?P<comment>  #[^\n]*)?$", re.MULTILINE)
SHAPE = re.compile(r"\((\d+), (\d+), (\d+)\)")  # a shape written as a tuple of three sizes: (32, 50, 64)
EXAMPLE = ("queries and keys", "values and the output", "scores and weights")  # the roles the handout's example names


def shapes(lesson: Lesson) -> dict[str, tuple[int, int, int]]:
    """Each shape the lesson's material names, by its role."""
    B, T, T_k, d_k, d_v = lesson.batch, lesson.sequence, lesson.key_sequence, lesson.d_k, lesson.d_v
    return {
        "queries and keys": (B, T, d_k),
        "values and the output": (B, T, d_v),
        "scores and weights": (B, T, T),
        "the knowledge check's keys": (B, T_k, d_k),
        "the knowledge check's scores": (B, T, T_k),
    }


def render(text: str, source: Lesson, lesson: Lesson, named: tuple[str, ...] = (), where: str = "") -> str:
    """``text``, written with ``source``'s shapes, with each of them written as ``lesson``'s same shape. ``text`` (the
    file ``where``) must name the shapes of the roles ``named``: written with other sizes, it could not be built with
    any lesson's."""
    written = shapes(source)
    for role in named:
        if text_of(written[role]) not in text:
            raise ValueError(
                f"{where} does not name the shape of the lesson's {role}, {text_of(written[role])}: it is written with"
                " the shipped settings' [lesson] (autograder/defaults.toml), and another lesson is built with"
                " sdpa-build --config FILE"
            )
    if lesson == source:
        return text
    if len(set(written.values())) != len(written):
        raise ValueError(
            f"the [lesson] the sources are written with gives two roles one shape ({written}): a shape in them could"
            " not be told from another; give the sizes distinct values"
        )
    wanted = shapes(lesson)
    rewrite = {text_of(shape): text_of(wanted[role]) for role, shape in written.items()}
    return SHAPE.sub(lambda match: rewrite.get(match.group(0), match.group(0)), text)


def render_public_tests(text: str, lesson: Lesson) -> str:
    """The public tests with ``lesson``'s sizes on their one lesson line (``LESSON_LINE``), whatever it held."""
    found = LESSON_LINE.findall(text)
    if len(found) != 1:
        raise ValueError(
            f"the public tests hold {len(found)} lines `B, T, d_k, d_v = ...` (the lesson's sizes, which sdpa-build"
            " writes): they must hold one"
        )
    sizes = f"{lesson.batch}, {lesson.sequence}, {lesson.d_k}, {lesson.d_v}"
    return LESSON_LINE.sub(lambda m: f"{m['indent']}B, T, d_k, d_v = {sizes}{m['comment'] or ''}", text)


def render_notebook(text: str, source: Lesson, lesson: Lesson) -> str:
    """The notebook (``json.dumps`` of it, as release/notebook.py writes it) with ``lesson``'s shapes in every cell:
    the handout's, the checks' and the knowledge check's as ``render`` writes them, the public tests' lesson line as
    ``render_public_tests`` does."""
    notebook = json.loads(text)
    for cell in notebook["cells"]:
        cell["source"] = render(cell["source"], source, lesson)
        if LESSON_LINE.search(cell["source"]):
            cell["source"] = render_public_tests(cell["source"], lesson)
    return json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def text_of(shape: tuple[int, ...]) -> str:
    """A shape as the sources write it: (32, 50, 64)."""
    return "(" + ", ".join(str(size) for size in shape) + ")"
