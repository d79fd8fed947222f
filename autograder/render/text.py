"""A check's feedback as text, worded here from its fields, and the tiny example's picture as a block grid.

The wording around a check's fields (its likely cause, its flag, a cause borrowed from another
check) is written only here, for results.json's ``output``, the terminal and nbgrader's cells.
The block grid is made from the ``picture`` field of a result (``autograder.checks.pictures``):
plain text that reads the same in a terminal, Gradescope's text output and nbgrader's feedback.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from autograder.assignment.deadline import late_by
from autograder.checks.examples import EXAMPLES
from autograder.record import Result
from autograder.status import Status, Verdict

if TYPE_CHECKING:
    from autograder.scoring import Scored

CAUSE = "Likely cause: "
# What happens after the grader's own failure, as it really is on every path: nothing reaches the
# instructor by itself (on Gradescope the run only exits 3), so the student is told to ask.
GRADER_FAILED_NEXT = (
    "What it could not check counts 0 until it is graded again: ask your instructor to regrade this submission."
)
GRADER_FAILED_CHECK = f"the grader itself failed on this check, not your code. {GRADER_FAILED_NEXT}"
# results.json's output when the grader failed before it could grade (report.grader_failure)
GRADER_FAILED = f"The grader failed on this submission (your code is not to blame). {GRADER_FAILED_NEXT}"
FLAGGED = "Flagged for the instructor's review."
# what a check that kept its points by error carried forward found, after why it kept them
FOUND = "What it found: "
# a gated check (integrity, timing) of a function that fails its own checks: no verdict on the student
WITHHELD = "Not awarded yet: this check's points are withheld, given once {function} passes its own correctness checks."

# (lower bound, block): a weight at or above the bound is drawn with the block; any other weight above 0, "░"
SHADES = ((0.75, "█"), (0.5, "▓"), (0.25, "▒"))
MASKED = "·"
NOT_A_NUMBER = "?"
LEGEND = (
    f"weight: █ >=.75  ▓ >=.5  ▒ >=.25  ░ >0  (blank) 0   {NOT_A_NUMBER * 2} NaN or inf\n"
    f"{MASKED}{MASKED} masked key (must get 0)   {MASKED}░ masked key that got weight, beyond tolerance"
)


def late_sentence(late: dict, max_score: float) -> str:
    """A student's late line, from a result's ``extra_data.late`` (deadline.Late's fields, the one source of the
    arithmetic): how late, the share of the raw score taken off, the final score; "" for a submission on time."""
    hours, penalty, raw = late.get("hours_late") or 0, late.get("late_penalty") or 0, late.get("raw_score") or 0
    extension = late.get("extension") or ""
    if late.get("missing_time"):
        return "No submission time was found, so no late penalty was applied; your instructor will review it."
    if not hours:
        return f"Submitted by your extended due date ({extension}): nothing taken off." if extension else ""
    due = f"your extended due date ({extension})" if extension else "the due date"
    score = f"{late.get('score', raw):g}/{max_score:g}"
    if not penalty:
        return f"Late: {late_by(hours)} after {due}; nothing taken off: {score}."
    share = f"{round(100 * penalty / raw, 1):g}%" if raw else "all"
    return f"Late: {late_by(hours)} after {due}; {share} of {raw:g} taken off ({penalty:g}): {score}."


def with_late(output: str, old: dict | None, new: dict | None, max_score: float) -> str:
    """results.json's top-level ``output`` with its late line: an earlier policy's line replaced by this one's
    (``new`` None: the line removed)."""
    if isinstance(old, dict) and (before := late_sentence(old, max_score)):
        output = output.removesuffix(f"\n{before}")
    after = late_sentence(new, max_score) if isinstance(new, dict) else ""
    return f"{output}\n{after}" if after else output


def result_output(ungradable: str, grader_error: bool, graded_file: str) -> str:
    """results.json's top-level ``output``: why nothing was graded, that the grader failed on some checks, or what
    the feedback holds; then what flags the graded file (``graded_file_text``), where something does."""
    if ungradable:
        output = f"Your submission could not be graded: {ungradable}. Score: 0."
    elif grader_error:
        output = f"The grader itself failed on some checks (your code is not to blame). {GRADER_FAILED_NEXT}"
    else:
        output = "Graded by the hidden checks. Each check names what it tested; failed checks say what went wrong."
    return f"{output} {graded_file} {FLAGGED}" if graded_file else output


def graded_file_text(extra: dict) -> str:
    """What a result's ``extra_data`` says about the file graded (submission.choose), "" unless it flags the student:
    other files that could be the submission, or a search stopped by a bound. The caller adds FLAGGED where it fits."""
    sentences = []
    candidates = extra.get("candidates") or []
    if candidates:
        sentences.append(f"Graded {candidates[0]}; the submission also holds {', '.join(candidates[1:])}.")
    stopped = extra.get("search_stopped")
    if stopped:
        sentences.append(
            f"The search for the file to grade stopped at limits.{stopped['limit']} = {stopped['value']}"
            f" and graded {extra.get('graded_file')}."
        )
    return " ".join(sentences)


def shade(weight: float | None) -> str:
    """One character for one weight: blank only for exactly 0, a block up to full (1), '?' for NaN or inf, '-' below 0.

    The smallest weight above 0 gets a block: a masked key that leaks 1e-4 must not look masked.
    """
    if weight is None:
        return NOT_A_NUMBER
    if weight == 0:
        return " "
    if weight < 0:
        return "-"
    return next((block for bound, block in SHADES if weight >= bound), "░")


def cell(weight: float | None, allowed: bool, leaked: bool | None = None) -> str:
    """Two characters: the shade twice for a key the query may attend to; a dot and the shade for a masked key
    that got weight (``leaked``: more than its check allows; unknown, any weight above 0), two dots for one that
    did not."""
    mark = shade(weight)
    if allowed:
        return mark * 2
    leaked = mark != " " if leaked is None else leaked
    return MASKED + (mark if leaked else MASKED)


def got_weight(picture: dict, i: int, j: int) -> bool:
    """Whether masked key j of query i got weight in the student's result: more than the check allows there
    (the picture's ``leaked``, from checks/pictures.py); for a picture without it, any weight but exactly 0."""
    leaked = picture.get("leaked")
    if leaked is not None:
        return bool(leaked[i][j])
    weight = picture["got"][i][j]
    return weight is None or weight != 0


def grid_rows(weights: list[list[float | None]], mask: list[list[bool]] | None, leaked=None) -> list[str]:
    """One row of cells per query; ``leaked`` (the student's grid only) marks the masked keys that got weight."""
    rows = []
    for i, row in enumerate(weights):
        cells = "".join(
            cell(w, True if mask is None else mask[i][j], None if leaked is None else leaked[i][j])
            for j, w in enumerate(row)
        )
        rows.append(f"│{cells}│")
    return rows


def block_grid(picture: dict) -> str:
    """Expected and got side by side, one row per query, with a header and a legend."""
    width = 2 * picture["keys"] + 2
    expected = grid_rows(picture["expected"], picture["mask"])
    got = grid_rows(picture["got"], picture["mask"], picture.get("leaked"))
    described = EXAMPLES.get(picture["example"], picture["example"])
    keys = "".join(f"{j:<2d}" for j in range(picture["keys"]))
    lines = [
        f"Attention weights, tiny public example ({picture['queries']} queries x {picture['keys']} keys; {described}):",
        f"{'':9}{'expected':<{width}}   {'yours':<{width}}",
        f"{'key':>8} {keys:<{width - 1}}    {keys}",
    ]
    lines += [f"{'query ' + str(i):>8}{e}   {g}" for i, (e, g) in enumerate(zip(expected, got))]
    lines.append(LEGEND)
    return "\n".join(lines)


def with_picture(feedback: str, picture: dict | None) -> str:
    """A check's feedback, followed by its picture's block grid when it has one."""
    return f"{feedback}\n{block_grid(picture)}" if picture else feedback


def carried_forward(functions: tuple[str, ...]) -> str:
    """The sentence of a check that keeps its points because it fails only through the functions it builds on."""
    names = " and ".join(functions)
    verb = "is" if len(functions) == 1 else "are"
    return (
        f"Correct once {names} {verb} fixed: this check keeps its points, since it fails only because of {names}"
        " (a mistake costs its points once, where it is made)."
    )


def sentences(item: Scored) -> list[str]:
    """A scored check's feedback as sentences: what was found (its flag and a borrowed cause included),
    then its own likely cause, if it has one. A withheld check says only when it is awarded; one that kept its points
    by error carried forward says so first, then what was found."""
    if item.withheld:
        return [WITHHELD.format(function=item.outcome.function)]
    if item.outcome.status == Status.GRADER_ERROR:  # what the grader's failure said is for the instructor's log
        return [GRADER_FAILED_CHECK]
    found = item.feedback + (f" {FLAGGED}" if item.outcome.flag else "")
    if item.carried:  # kept its points: why first, then what was found (no failure to read as one)
        found = f"{carried_forward(item.carried)} {FOUND}{found}"
    if item.borrowed:
        check, cause = item.borrowed
        found += f" Probably the same cause as in {check}: {cause}."
    return [found, f"{CAUSE}{item.outcome.cause}."] if item.outcome.cause else [found]


def neither_count(carried: int, withheld: int) -> str:
    """A check's class counts that are neither passed nor failed (status.Verdict), in words: "2 kept its points,
    1 withheld"; "" for none. The class summary and the dashboard put it after the passes."""
    counts = ((carried, Verdict.CARRIED), (withheld, Verdict.WITHHELD))
    return ", ".join(f"{count} {word.shown}" for count, word in counts if count)


def says_passed(output: str) -> bool:
    """Whether a results record's ``output`` is the whole feedback of a check that passed with nothing more to say
    (scoring's feedback Status.PASSED, worded as itself): the terminal and the pages show it as "ok"."""
    return output == Status.PASSED


def output_text(item: Scored) -> str:
    """results.json's ``output``: the sentences on one line, then the picture's block grid."""
    return with_picture(" ".join(sentences(item)), item.outcome.picture)


def paragraphs(item: Scored) -> list[str]:
    """The feedback's lines for a narrow page (nbgrader's cells): the likely cause on a line of its own."""
    lines = [line for sentence in sentences(item) for line in sentence.splitlines()]
    return lines + (block_grid(item.outcome.picture).splitlines() if item.outcome.picture else [])


def describe(mistake: str) -> str:
    """A named mistake's short description: the first clause of its sentence."""
    from autograder.checks.mistakes import SENTENCES

    return SENTENCES.get(mistake, mistake).split(";")[0]


def reason(flag: str) -> str:
    """An integrity flag's short description."""
    from autograder.checks.flags import REASONS

    return REASONS.get(flag, flag)


def decided(result: Mapping | None) -> str:
    """The instructor's decisions in force in a result's record (course/decisions.py), in words: held and why, the
    override and its reason, the extension and its reason; "" for none."""
    record = Result.of(result).extra_data.get("record")
    if not isinstance(record, dict):
        return ""
    said = [f"held ({record['held']})"] if record.get("held") else []
    for key, value, label in (("override", "score", "score set to"), ("extension", "until", "extended to")):
        given = record.get(key)
        if isinstance(given, dict):
            shown_value = f"{given[value]:g}" if isinstance(given.get(value), (int, float)) else given.get(value)
            said.append(f"{label} {shown_value} ({given.get('reason') or 'no reason given'})")
    return "; ".join(said)
