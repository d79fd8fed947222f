"""The knowledge check: questions for the notebook, and their answers (instructors only).

Only the grading process reads this file: the notebook's check cells hold no code, and
``verdict`` reads a student's answer from the source of the answer cell, as a value written
out (``ast.literal_eval``), without running it (autograder/nbgrader_path/autograde.py).
Every path scores it alike: nbgrader writes each question's verdict into its check cell, worth
``POINTS``; ``sdpa-grade`` (alone, ``--batch``, the Gradescope bundle) grading a notebook adds one
test per question to results.json (``results``), from the same verdicts, so that a notebook's
raw score, and the late penalty taken from it, are the same on every path. The questions on shapes ask about the
lesson's ([lesson] in the settings): ``questions(lesson)``; ``QUESTIONS`` are the defaults'.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from autograder.config import Lesson, load_settings
from autograder.status import Status


@dataclass(frozen=True)
class Question:
    name: str
    text: str
    example: str  # the placeholder the student replaces, showing the expected form
    answer: object
    section: str  # the handout section that answers it, named in the feedback of a wrong answer


def questions(lesson: Lesson) -> list[Question]:
    """The knowledge check, its questions on shapes asked with the lesson's ([lesson] in the settings)."""
    B, T, T_k, d_k, d_v = lesson.batch, lesson.sequence, lesson.key_sequence, lesson.d_k, lesson.d_v
    return [
        Question(
            "q_formula",
            "Which is scaled dot-product attention? (a) softmax(Q K^T) V, (b) softmax(Q K^T / sqrt(d_k)) V,"
            " (c) softmax(Q K^T / d_k) V, (d) softmax(Q^T K / sqrt(d_k)) V. Answer with a letter.",
            '"a"',
            "b",
            "The formula",
        ),
        Question(
            "q_why_scale",
            "The scale exists mainly to: (a) reduce the vocabulary size, (b) keep the softmax from saturating"
            " as d_k grows, (c) remove the need for V. Answer with a letter.",
            '"a"',
            "b",
            "Why scale?",
        ),
        Question(
            "q_variance",
            "For q, k with independent N(0, 1) entries and d_k = 64, what is Var(q . k)? Answer with a number.",
            "0",
            64,
            "Why scale?",
        ),
        Question(
            "q_scores_shape",
            f"Q has shape {(B, T, d_k)} and K has shape {(B, T_k, d_k)}. What is the shape of Q K^T?"
            " Answer with a tuple.",
            "(0, 0, 0)",
            (B, T, T_k),
            "The shape table",
        ),
        Question(
            "q_output_shape",
            f"With Q {(B, T, d_k)}, K {(B, T, d_k)} and V {(B, T, d_v)}, what is the output's shape?"
            " Answer with a tuple.",
            "(0, 0, 0)",
            (B, T, d_v),
            "The shape table",
        ),
        Question(
            "q_mask_polarity",
            "True or False: in this assignment's bool masks, True means the query may attend to the key.",
            "<True or False>",
            True,
            "Masks",
        ),
        Question(
            "q_causal_keys",
            "With a causal mask and T = 4, which key positions (0-based) may query 2 attend to? Answer with a list.",
            "[]",
            [0, 1, 2],
            "Masks",
        ),
        Question(
            "q_fully_masked",
            "Every key of a row is filled with -inf and a plain softmax is applied. The row comes out as:"
            " (a) all zeros, (b) uniform, (c) NaN. Answer with a letter.",
            '"a"',
            "c",
            "Fully masked rows",
        ),
        Question(
            "q_argmax",
            "True or False: dividing every score of a row by the same positive constant changes the row's argmax.",
            "<True or False>",
            False,
            "Why scale?",
        ),
        Question(
            "q_multi_head",
            "Multi-head attention runs scaled dot-product attention: (a) once, globally, (b) once per head,"
            " then concatenates the heads, (c) on the values only. Answer with a letter.",
            '"a"',
            "b",
            "Multi-head attention",
        ),
    ]


QUESTIONS = questions(load_settings(environ={}).lesson)  # the defaults': their names and order are every lesson's
BY_NAME = {question.name: question for question in QUESTIONS}


def _normal(value):
    if isinstance(value, str):
        return value.strip().lower().strip("()")
    if isinstance(value, (list, tuple)):
        return [_normal(item) for item in value]
    return value  # a number as it is: 64 == 64.0, and an integer too large for a float is compared, not converted


def _form(answer) -> str:
    if isinstance(answer, bool):
        return "True or False"
    if isinstance(answer, str):
        return 'a letter in quotes, such as "a"'
    if isinstance(answer, (int, float)):
        return "a number"
    return f"a {type(answer).__name__}"


MAX_CELL = 10_000  # characters (limits.answer_chars): an answer cell is one line; a longer one is not parsed at all


class NotAnAnswer(ValueError):
    """The answer cell sets no value that can be read without running it; the message says what to write."""


def assignments(source: str) -> dict[str, ast.Assign]:
    """Each name that ``source`` assigns at its top level -> its last assignment there; read, never run. The one walk
    of an answer's parse: a cell's (``answer_in``, ``answer_cells``) and a .py's (``answers_in_py``). It raises what
    ``ast.parse`` raises, for each caller to say in its own words."""
    found: dict[str, ast.Assign] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found[target.id] = node
    return found


def answer_in(source: str, name: str, max_chars: int = MAX_CELL) -> object:
    """The value the cell's last assignment to ``name`` writes out (a number, a string, a tuple...), never run.

    A cell longer than ``max_chars`` is not parsed at all."""
    example = f"{name} = {BY_NAME[name].example}"
    if len(source) > max_chars:
        raise NotAnAnswer(f"the answer cell is over {max_chars} characters; write only `{example}` with your answer")
    try:
        assigned = assignments(source)
    except (SyntaxError, ValueError):
        raise NotAnAnswer(f"the answer cell is not valid Python; write it as `{example}`") from None
    except (RecursionError, MemoryError):  # the parser's own depth limit, on at most max_chars characters
        raise NotAnAnswer(f"the answer cell nests too deeply to read; write it as `{example}`") from None
    if name not in assigned:
        raise NotAnAnswer(f"the answer cell does not set {name}; write it as `{example}`")
    try:
        return ast.literal_eval(assigned[name].value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise NotAnAnswer(f"set {name} to a value written out, as in `{example}`, not to an expression") from None


def _shown(value: object, limit: int = 100) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def verdict(name: str, source: str, max_chars: int = MAX_CELL, lesson: Lesson | None = None) -> str:
    """ "" when the answer cell's source answers question ``name`` (on ``lesson``'s shapes: the grading's settings';
    the defaults' without one); otherwise the feedback, which never gives the answer.

    The feedback repeats the student's answer and names the handout section to reread.
    """
    question = BY_NAME[name] if lesson is None else {q.name: q for q in questions(lesson)}[name]
    try:
        value = answer_in(source, name, max_chars)
    except NotAnAnswer as reason:
        return str(reason)
    if isinstance(question.answer, bool) != isinstance(value, bool) or _normal(value) != _normal(question.answer):
        return (
            f"{_shown(value)} is not the expected answer ({_form(question.answer)});"
            f" reread '{question.section}' in the handout"
        )
    return ""


POINTS = 1  # each question's points, on its check cell (release/notebook.py) and in results.json alike
FUNCTION, CATEGORY = "knowledge_check", "knowledge-check"  # a question's tags in results.json


@dataclass(frozen=True)
class Answer:
    """Where a notebook answers a question: the answer cell's source ("" where none was found), its number in the
    notebook (1 = the first cell; 0 for none; in a .py, the answer's line), and, where the cell was not the one
    marked cell, how it was chosen, said in the feedback (``note``)."""

    source: str = ""
    cell: int = 0
    note: str = ""

    def said(self, message: str) -> str:
        """The question's feedback (``verdict``'s message, "" for a right answer) with the note on the cell."""
        return "\n".join(part for part in (message, self.note) if part)


# metadata["sdpa_grade"][COPY_OF]: the grade id of an answer cell a pasted copy of which follows it, the mark the
# nbgrader path's DeduplicateIds leaves in place of nbgrader's metadata
COPY_OF = "copy_of"


def _marked(meta: dict, name: str) -> bool:
    """The cell is marked as ``name``'s answer cell: nbgrader's solution metadata, or the mark DeduplicateIds leaves
    on an earlier copy of it (the nbgrader path keeps nbgrader's metadata on the last copy only)."""
    nbgrader, ours = meta.get("nbgrader", {}), meta.get("sdpa_grade", {})
    return (isinstance(nbgrader, dict) and bool(nbgrader.get("solution")) and nbgrader.get("grade_id") == name) or (
        isinstance(ours, dict) and ours.get(COPY_OF) == name
    )


def _names_set(source: str, max_chars: int) -> set[str]:
    """The names the cell's code assigns at its top level (``assignments``; a cell over ``max_chars``, or one that does
    not parse, sets none)."""
    if len(source) > max_chars:
        return set()
    try:
        return set(assignments(source))
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return set()


def _names_of(sets: dict[int, set[str]], number: int, source: str, max_chars: int) -> set[str]:
    """Cell ``number``'s names set (``_names_set``), read the first time a question asks and kept in ``sets``."""
    if number not in sets:
        sets[number] = _names_set(source, max_chars)
    return sets[number]


def _cells_named(numbers: list[int]) -> str:
    return "cells " + ", ".join(map(str, numbers[:-1])) + f" and {numbers[-1]}"


def answer_cells(cells: list, max_chars: int = MAX_CELL) -> dict[str, Answer]:
    """Question name -> its answer cell, found the same way on every path (``cells`` as bounded.notebook_cells checked
    them, or nbgrader's notebook): the last code cell marked as its answer cell (nbgrader keeps the last copy of a
    pasted cell, and a kernel run leaves its value); where no cell is marked (a Merge of cells drops the metadata),
    the last code cell, not a test cell, that sets the name at its top level. A question with neither is absent."""
    found: dict[str, Answer] = {}
    code = []
    for number, cell in enumerate(cells, 1):
        if cell.get("cell_type") != "code":
            continue
        meta = cell.get("metadata", {})
        nbgrader = meta.get("nbgrader", {}) if isinstance(meta, dict) else {}
        if isinstance(nbgrader, dict) and nbgrader.get("grade") and not nbgrader.get("solution"):
            continue  # a test cell: the grader's, never the student's answer
        source = cell.get("source", "")
        code.append((number, meta if isinstance(meta, dict) else {}, "".join(source) if isinstance(source, list)
                     else str(source)))  # fmt: skip
    sets: dict[int, set[str]] = {}  # cell number -> the names it sets, each cell read once, where it is needed
    for name in BY_NAME:
        marked = [(number, source) for number, meta, source in code if _marked(meta, name)]
        if len(marked) == 1:
            found[name] = Answer(marked[0][1], marked[0][0])
        elif marked:
            numbers = [number for number, _ in marked]
            note = (
                f"{_cells_named(numbers)} are all {name}'s answer cell (a pasted copy?): the last, cell {numbers[-1]},"
                " is graded"
            )
            found[name] = Answer(marked[-1][1], numbers[-1], note)
        else:
            setting = [
                (number, source)
                for number, _, source in code
                if name in source and name in _names_of(sets, number, source, max_chars)
            ]
            if setting:
                number, source = setting[-1]
                note = (
                    f"no cell is marked as {name}'s answer cell (its nbgrader metadata is gone, as after a Merge of"
                    f" cells): cell {number}, the last that sets {name}, is graded"
                )
                found[name] = Answer(source, number, note)
    return found


# Why a submission's knowledge check counts 0 (``results``' ``missing``): the assignment has one maximum, the
# questions' points counted as not handed in wherever no answer could be read, each saying where the answers go
WHERE = (
    "The answers go in the notebook (sdpa.ipynb): its last section, 'Knowledge check', has one cell below each"
    ' question, such as `q_formula = "a"`, where you replace the example with your answer. Hand in the notebook,'
    " your code and your answers in it, to earn these points."
)
IN_A_PY = (
    "not handed in: this .py file sets none of the knowledge check's answers. They go at the end of attention.py,"
    ' under its "Knowledge check" heading: one line per question, such as `q_formula = "a"`, where you replace the'
    " example with your answer (or, in a course that hands out the notebook, in the notebook's 'Knowledge check')."
)
NO_ANSWER_CELLS = f"not handed in: this notebook has none of the knowledge check's answer cells. {WHERE}"
NOT_READ = "not graded: the submission could not be read (the reason is at the top), so no answer was read either."


def answers_in_py(source: str, max_chars: int = MAX_CELL) -> dict[str, Answer]:
    """Question name -> its answer in a .py file: the last top-level assignment to the name (the template's
    "Knowledge check" section at its end), its line as the cell's source and its line number; read, never run. A
    file that does not parse answers nothing (its checks say why)."""
    try:
        assigned = assignments(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return {}
    return {
        name: Answer(ast.get_source_segment(source, node) or "", node.lineno)
        for name, node in assigned.items()
        if name in BY_NAME
    }


def results(
    cells: list,
    visibility: str,
    max_chars: int = MAX_CELL,
    lesson: Lesson | None = None,
    missing: str = "",
    answers: dict[str, Answer] | None = None,
) -> list[dict]:
    """One results.json test per question, scored by ``verdict`` on the notebook's answer cells (or ``answers``, a
    .py's: ``answers_in_py``; a question with no answer is a wrong answer): POINTS for a right answer, 0 and the
    feedback for a wrong one. Where no answer could be read (``missing``: why, such as ``IN_A_PY``; or a notebook
    with none of the answer cells: ``NO_ANSWER_CELLS``), every question is there, 0 of POINTS, the first saying why
    and where the answers go, the others pointing to it: one maximum for every submission."""
    answers = {} if missing else answers if answers is not None else answer_cells(cells, max_chars)
    missing = missing or ("" if answers else NO_ANSWER_CELLS)
    tests = []
    for question in QUESTIONS:
        answer = answers.get(question.name, Answer())
        said = missing if question is QUESTIONS[0] else f"{missing.split(':')[0]}: see {QUESTIONS[0].name}"
        message = said if missing else verdict(question.name, answer.source, max_chars, lesson)
        # not handed in: not run (no answer to judge), 0 of POINTS, and no Gradescope status (judged by its score, as
        # a check not run); never an answer two students share (course/similarity.py skips what was not run)
        status = Status.NOT_RUN if missing else Status.FAILED if message else Status.PASSED
        tests.append({
            "name": f"{FUNCTION}: {question.name}", "score": 0.0 if message else float(POINTS),
            "max_score": float(POINTS), "output": answer.said(message or "Correct."), "visibility": visibility,
            "tags": [FUNCTION, CATEGORY], **({} if missing else {"status": str(status)}),
            "extra_data": {"check": question.name, "outcome": str(status), "mistake": "", "seconds": 0.0, "flag": "",
                           "evidence": None, "withheld": False},
        })  # fmt: skip
    return tests
