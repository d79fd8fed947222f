"""``sdpa-grade --batch DIR --report class.html``: a class dashboard, and a feedback page per student.

Everything is read from the class's results (class_results.py), which come from the results' structured
fields, never from their wording: the same numbers as the batch's text summary and CSV. The dashboard is
one HTML file with its plots embedded; the feedback pages sit in a folder beside it, named after it,
each student's page named by roster.py.
"""

from __future__ import annotations

import math
from collections import Counter
from html import escape
from pathlib import Path
from urllib.parse import quote

from autograder.class_results import GRADED, ClassResults, describe
from autograder.render import images
from autograder.render.html import image_tag, page, write_student_page

SORT_SCRIPT = """
document.querySelectorAll("table.sortable").forEach(function (table) {
  table.querySelectorAll("th[data-sort]").forEach(function (header, column) {
    header.addEventListener("click", function () {
      var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      var numeric = header.dataset.sort === "number", down = header.dataset.dir !== "down";
      header.dataset.dir = down ? "down" : "up";
      rows.sort(function (a, b) {
        var x = a.cells[column].dataset.value, y = b.cells[column].dataset.value;
        var order = numeric ? parseFloat(x) - parseFloat(y) : x.localeCompare(y);
        return down ? -order : order;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
});
"""


def _section(title: str, content: str, anchor: str) -> str:
    return f'<section id="{anchor}"><h2>{escape(title)}</h2>\n{content}\n</section>'


def _score_plot(stats: ClassResults) -> str:
    graded = [s for s in stats.present if s.status == GRADED]
    # the usual maximum (an ungradable submission may be scored out of a little more: checks that could not run)
    top = Counter(s.max_score for s in stats.present).most_common(1)[0][0] if stats.present else 1
    top = top or 1
    step = max(1, math.ceil(top / 20))
    bins = [step * i for i in range(int(top // step) + 2)]
    scores = [s.score for s in stats.present]
    mean = sum(scores) / len(scores) if scores else 0
    text = (f"<p>{len(stats.present)} submissions, {len(graded)} graded; mean {mean:.1f} of {top:g}; "
            f"full marks: {sum(s.score == s.max_score > 0 for s in stats.present)}.</p>")
    figure = images.histogram_png(scores, bins=bins, xlabel=f"score (of {top:g})", title="Scores")
    return text + image_tag(figure, "histogram of the scores")


def _pass_plot(stats: ClassResults) -> str:
    if not stats.seen:
        return "<p>No check was scored.</p>"
    names = list(stats.seen)
    rates = [100 * stats.passed[n] / stats.seen[n] for n in names]
    colors = [images.GREEN if r >= 80 else "#e69a28" if r >= 50 else images.RED for r in rates]
    figure = images.bars_png(names, rates, xlabel="% of submissions that passed", title="Pass rate per check", limit=100,
                             colors=colors)
    rate = dict(zip(names, rates))
    rows = "".join(
        f'<tr><td data-value="{escape(n)}">{escape(n)}</td><td class="number" data-value="{rate[n]:.3f}">'
        f"{stats.passed[n]}/{stats.seen[n]} ({rate[n]:.0f}%)</td></tr>"
        if n in rate else f'<tr><td data-value="{escape(n)}">{escape(n)}</td><td class="number" data-value="-1">not scored</td></tr>'
        for n in stats.checks
    )
    table = ('<details><summary>as a table</summary><table class="sortable"><thead><tr><th data-sort="text">check</th>'
             f'<th class="number" data-sort="number">passed</th></tr></thead><tbody>{rows}</tbody></table></details>')
    return image_tag(figure, "pass rate of each check") + table


def _mistake_plot(stats: ClassResults) -> str:
    if not stats.mistakes:
        return "<p>No named mistake was recognised.</p>"
    common = stats.mistakes.most_common()
    figure = images.bars_png([k for k, _ in common], [c for _, c in common], xlabel="submissions showing it",
                             title="Named mistakes, most frequent first", integers=True)
    rows = "".join(f'<tr data-mistake="{escape(k)}"><td class="number">{c}</td><td><code>{escape(k)}</code></td>'
                   f"<td>{escape(describe(k))}</td></tr>" for k, c in common)
    return (image_tag(figure, "named mistakes by frequency")
            + '<table><thead><tr><th class="number">submissions</th><th>mistake</th><th>what it means</th></tr></thead>'
            f"<tbody>{rows}</tbody></table>")


def _flag_table(stats: ClassResults, links: dict[str, str]) -> str:
    if not stats.flags:
        return "<p>Nothing to review: no integrity check flagged a submission, and every one was graded.</p>"
    rows = "".join(
        f'<tr><td><a href="{links[f.student]}">{escape(f.student)}</a></td><td>{escape(f.kind)}</td>'
        f'<td><pre class="feedback">{escape(f.detail)}</pre></td></tr>'
        for f in stats.flags
    )
    return f"<table><thead><tr><th>student</th><th>flag</th><th>detail</th></tr></thead><tbody>{rows}</tbody></table>"


def _time_plot(stats: ClassResults) -> str:
    seconds = sorted(s.seconds for s in stats.present)
    if not seconds:
        return "<p>No submission was graded.</p>"
    top = max(seconds[-1], 1.0)
    step = top / 15
    bins = [step * i for i in range(17)]
    middle = seconds[len(seconds) // 2]
    text = f"<p>Median {middle:.1f} s, slowest {seconds[-1]:.1f} s, {sum(seconds):.0f} s in all (one grading each).</p>"
    slowest = sorted(stats.check_seconds.items(), key=lambda item: -sum(item[1]) / len(item[1]))[:5]
    rows = "".join(f'<tr><td>{escape(name)}</td><td class="number">{sum(t) / len(t):.2f}</td><td class="number">{max(t):.2f}</td></tr>'
                   for name, t in slowest)
    table = ('<table><thead><tr><th>slowest checks</th><th class="number">mean seconds</th><th class="number">longest</th></tr>'
             f"</thead><tbody>{rows}</tbody></table>")
    return text + image_tag(images.histogram_png(seconds, bins=bins, xlabel="seconds", title="Grading time per submission"),
                            "histogram of grading times") + table


def _student_table(stats: ClassResults, links: dict[str, str]) -> str:
    rows = []
    for s in stats.present:
        mistakes = ", ".join(s.mistakes)
        flags = ", ".join(sorted({f.kind for f in s.flags}))
        percent = 100 * s.score / s.max_score if s.max_score else 0.0
        rows.append(
            f'<tr data-student="{escape(s.name)}"><td data-value="{escape(s.name)}"><a href="{links[s.name]}">{escape(s.name)}</a></td>'
            f'<td class="number" data-value="{s.score:g}">{s.score:g}/{s.max_score:g}</td>'
            f'<td class="number" data-value="{percent:.3f}">{percent:.0f}%</td>'
            f'<td class="number" data-value="{s.seconds:.3f}">{s.seconds:.1f}</td>'
            f'<td data-value="{escape(s.status)}">{escape(s.status)}</td>'
            f'<td data-value="{escape(flags)}">{escape(flags)}</td>'
            f'<td data-value="{escape(mistakes)}">{escape(mistakes)}</td></tr>'
        )
    header = "".join(
        f'<th data-sort="{kind}"{" class=number" if kind == "number" else ""}>{label}</th>'
        for label, kind in (("student", "text"), ("score", "number"), ("%", "number"), ("seconds", "number"),
                            ("status", "text"), ("flags", "text"), ("named mistakes", "text"))
    )  # fmt: skip
    return (f'<p class="muted">Click a column to sort; click a name for that student\'s feedback page.</p>'
            f'<table class="sortable" id="student-table"><thead><tr>{header}</tr></thead><tbody>{"".join(rows)}</tbody></table>')


def dashboard(stats: ClassResults, links: dict[str, str]) -> str:
    """The class dashboard as one self-contained HTML document; ``links``: student -> their feedback page."""
    body = "\n".join([
        "<h1>Class dashboard: scaled dot-product attention</h1>",
        '<p class="muted"><a href="#scores">scores</a> · <a href="#checks">checks</a> · <a href="#mistakes">mistakes</a>'
        ' · <a href="#flags">to review</a> · <a href="#times">grading times</a> · <a href="#students">students</a></p>',
        _section("Scores", _score_plot(stats), "scores"),
        _section("Pass rate of each check", _pass_plot(stats), "checks"),
        _section("Named mistakes", _mistake_plot(stats), "mistakes"),
        _section(f"To review ({len(stats.flags)})", _flag_table(stats, links), "flags"),
        _section("Grading times", _time_plot(stats), "times"),
        _section("Students", _student_table(stats, links), "students"),
    ])  # fmt: skip
    return page("Class dashboard", body, SORT_SCRIPT)


def write_report(path: Path, stats: ClassResults) -> Path:
    """Write the dashboard at ``path`` and each student's feedback page in ``<path stem>-feedback/``; return that folder.

    Students with no result (a merge with some missing) get neither a page nor a row.
    """
    folder = path.parent / f"{path.stem}-feedback"
    folder.mkdir(parents=True, exist_ok=True)
    links = {}
    for student in stats.present:
        write_student_page(folder / student.page, student.name, student.result, back=f"../{quote(path.name)}")
        links[student.name] = f"{quote(folder.name)}/{quote(student.page)}"
    path.write_text(dashboard(stats, links), encoding="utf-8")
    return folder
