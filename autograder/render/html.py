"""``sdpa-grade FILE --html feedback.html``: one student's feedback as a self-contained page.

Made from a results.json alone: each check's points and feedback, and, where a check has a
``picture`` field, the tiny example's weights as an embedded image. No script, no network:
the page can be returned through nbgrader's feedback folder or an LMS as it is.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

from autograder.render import images
from autograder.render.inert import inert
from autograder.render.text import block_grid

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto; max-width: 1100px; color: #222;
       padding: 0 1em; }
h1 { margin-bottom: 0.2em; } h2 { margin-top: 1.6em; border-bottom: 1px solid #ddd; }
.total { font-size: 1.3em; } .muted { color: #666; }
table { border-collapse: collapse; width: 100%; margin: 0.6em 0; }
th, td { text-align: left; padding: 0.35em 0.6em; border-bottom: 1px solid #e4e4e4; vertical-align: top; }
th { background: #f4f4f4; }
td.points, th.points, td.number, th.number { text-align: right; white-space: nowrap; }
tr.passed td.points { color: #2d7a47; } tr.failed td.points { color: #b03a2e; font-weight: bold; }
.feedback { white-space: pre-wrap; font-family: inherit; margin: 0; }
img { max-width: 100%; display: block; margin: 0.5em 0; } img.attention { max-width: 560px; }
.notice { background: #fff4e5; border-left: 4px solid #e69a28; padding: 0.5em 1em; }
th[data-sort] { cursor: pointer; user-select: none; } th[data-sort]::after { content: " \\2195"; color: #999; }
"""


def page(title: str, body: str, script: str = "") -> str:
    """A whole HTML document: inline style, inline script if any, nothing fetched."""
    tail = f"<script>{script}</script>" if script else ""
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f'<meta name="viewport" content="width=device-width, initial-scale=1"><style>{STYLE}</style></head>'
        f"<body>\n{body}\n{tail}</body></html>\n"
    )


def feedback_text(test: dict) -> str:
    """A check's feedback without its block grid: the page shows the picture as an image instead."""
    picture = (test.get("extra_data") or {}).get("picture")
    output = test.get("output", "")
    return output.removesuffix(f"\n{block_grid(picture)}") if picture else output


def image_tag(image: bytes, alt: str, kind: str = "plot") -> str:
    return f'<img class="{kind}" src="{images.data_uri(image)}" alt="{escape(alt)}">'


def check_rows(result: dict) -> str:
    rows = []
    for test in result.get("tests", []):
        state = "passed" if test.get("score") == test.get("max_score") and test.get("max_score") else "failed"
        if not test.get("max_score"):
            state = "unscored"
        text = "ok" if test.get("output") == "passed" else feedback_text(test)
        name = test["name"]
        picture = (test.get("extra_data") or {}).get("picture")
        shown = image_tag(images.attention_png(picture), f"attention weights of {test['name']}, expected beside yours", "attention") if picture else ""
        rows.append(
            f'<tr class="{state}" data-check="{escape(inert(name))}"><td>{escape(inert(name))}</td>'
            f'<td class="points">{test.get("score", 0):g}/{test.get("max_score", 0):g}</td>'
            f'<td><pre class="feedback">{escape(inert(text))}</pre>{shown}</td></tr>'
        )
    return "\n".join(rows)


def student_body(name: str, result: dict, back: str | None = None) -> str:
    parts = []
    if back:
        parts.append(f'<p><a href="{escape(back)}">&larr; class dashboard</a></p>')
    parts.append(f"<h1>Feedback: {escape(name)}</h1>")
    parts.append(f'<p class="total">Score: <b>{result.get("score", 0):g}</b> / {result.get("max_score", 0):g}</p>')
    notice = "notice" if result.get("ungradable") or result.get("grader_error") else "muted"
    parts.append(f'<p class="{notice}">{escape(result.get("output", ""))}</p>')
    if any((test.get("extra_data") or {}).get("picture") for test in result.get("tests", [])):
        parts.append(
            '<p class="muted">Pictures show the attention weights of a tiny public example (not the hidden inputs): '
            "darker blue is more weight, hatched cells are masked keys (their weight must be 0), a red outline marks a masked key that got weight, red cells are NaN.</p>"
        )
    parts.append('<table><thead><tr><th>check</th><th class="points">points</th><th>feedback</th></tr></thead><tbody>')
    parts.append(check_rows(result))
    parts.append("</tbody></table>")
    return "\n".join(parts)


def student_page(name: str, result: dict, back: str | None = None) -> str:
    return page(f"Feedback: {name}", student_body(name, result, back))


def write_student_page(path: Path, name: str, result: dict, back: str | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(student_page(name, result, back), encoding="utf-8")
