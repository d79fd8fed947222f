"""``sdpa-grade FILE --html feedback.html``: one student's feedback as a self-contained page.

Made from a results.json alone: each check's points and feedback, and, where a check has a
``picture`` field, the tiny example's weights as an embedded image. No script, no network:
the page can be returned through nbgrader's feedback folder or an LMS as it is. The pages (this
one and the class dashboard) are jinja2 templates in ``templates/``, with autoescape on: every
value a template writes is escaped, so a student's name or message is shown, never run.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING

from autograder.checks.examples import EXAMPLES
from autograder.record import CheckResult, Result
from autograder.render import images
from autograder.render.inert import inert, shown
from autograder.render.text import block_grid, late_sentence, says_passed, with_late
from autograder.status import verdict

if TYPE_CHECKING:
    import jinja2


@functools.cache
def templates() -> jinja2.Environment:
    """The pages' templates, autoescaped. jinja2 is imported here: grading alone (no page) never needs it."""
    import jinja2

    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("autograder.render", "templates"), autoescape=True,
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
    )  # fmt: skip
    environment.filters["g"] = lambda number: f"{number:g}"
    environment.filters["inert"] = inert
    environment.filters["shown"] = shown  # a name that is not UTF-8, with escapes: the page is written as UTF-8
    return environment


def feedback_text(test: CheckResult | dict) -> str:
    """A check's feedback (one of results.json's tests, or its record) without its block grid: the page shows the
    picture as an image instead."""
    test = test if isinstance(test, CheckResult) else CheckResult.of(test)
    return test.output.removesuffix(f"\n{block_grid(test.picture)}") if test.picture else test.output


def check_rows(result: dict) -> list[dict]:
    """Each check as the page shows it: passed, carried (kept its points), withheld, failed or unscored; its points;
    its feedback; its picture as a PNG."""
    rows = []
    for test in Result.of(result).tests:
        # passed, carried (kept its points), withheld (not awarded yet: neutral, never red) or failed: status.Verdict
        state = verdict(test).value if test.scored else "unscored"
        rows.append({
            "state": state, "name": test.name, "score": test.score, "max_score": test.max_score,
            "text": "ok" if says_passed(test.output) else feedback_text(test),
            "picture": images.data_uri(images.attention_png(test.picture)) if test.picture else "",
            "weights": weights_table(test.picture) if test.picture else None,
        })  # fmt: skip
    return rows


def weights_table(picture: dict) -> dict:
    """The picture's numbers as the page's table (the image's text alternative): per query, each key's expected
    weight / the student's, as the heat maps write them; "masked" for a masked key, "NaN" where there is none."""
    mask = picture["mask"]

    def shown(weights: list, i: int, j: int) -> str:
        weight = weights[i][j]
        text = "NaN" if weight is None else images.weight_label(weight)
        return f"{text} (masked)" if mask is not None and not mask[i][j] else text

    described = EXAMPLES.get(picture["example"], picture["example"])
    rows = [{"query": i, "cells": [f'{shown(picture["expected"], i, j)} / {shown(picture["got"], i, j)}'
                                   for j in range(picture["keys"])]}
            for i in range(picture["queries"])]  # fmt: skip
    return {"columns": list(range(picture["keys"])), "rows": rows, "function": picture["function"],
            "caption": f"{picture['queries']} queries x {picture['keys']} keys; {described}"}  # fmt: skip


def student_page(name: str, result: dict, back: str | None = None) -> str:
    """One student's feedback page; ``back``: the link to the class dashboard, if any."""
    record = Result.of(result)
    notice = "notice" if record.ungradable or record.grader_error else "muted"
    max_score = float(record.max_score)
    sentence = late_sentence(record.late, max_score) if record.late else ""
    output = with_late(record.output, record.late, None, max_score)  # the late line has its own place
    return templates().get_template("student.html").render(
        name=name, back=back, score=record.score, max_score=record.max_score, notice=notice,
        output=output, late=sentence, rows=check_rows(result),
    )  # fmt: skip


def write_student_page(path: Path, name: str, result: dict, back: str | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(student_page(name, result, back), encoding="utf-8")
