"""``sdpa-grade batch DIR --report class.html``: a class dashboard, and a feedback page per student.

Everything is read from the class's results (class_results.py), which come from the results' structured
fields, never from their wording: the same numbers as the batch's text summary and CSV. The dashboard is
one HTML file with its plots embedded; the feedback pages sit in a folder beside it, named after it,
each student's page named by roster.py. This module computes what the pages show (the plots, the rates,
the rows); templates/dashboard.html lays it out, autoescaped. ``stats`` is the class's results
(course.class_results.ClassResults) and ``found`` a regrade's changes (course.diff.Diff), handed in by the batch.
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from urllib.parse import quote

from autograder.assignment.deadline import late_by
from autograder.record import Result
from autograder.render import images
from autograder.render.html import templates, write_student_page
from autograder.render.text import decided, describe, neither_count
from autograder.status import GRADED


def _scores(stats) -> dict:
    students = stats.present
    # the usual maximum (an ungradable submission may be scored out of a little more: checks that could not run)
    top = Counter(s.max_score for s in students).most_common(1)[0][0] if students else 1
    top = top or 1
    step = max(1, math.ceil(top / 20))
    bins = [step * i for i in range(int(top // step) + 2)]
    scores = [s.score for s in students]
    figure = images.histogram_png(scores, bins=bins, xlabel=f"score (of {top:g})", title="Scores")
    return {"count": len(students), "graded": sum(s.status == GRADED for s in students), "top": top,
            "mean": sum(scores) / len(scores) if scores else 0,
            "full": sum(s.score == s.max_score > 0 for s in students), "plot": images.data_uri(figure)}  # fmt: skip


def _checks(stats) -> tuple[list[dict], str]:
    """Every check with its pass rate (``None``: never scored), and the plot of the scored ones' rates."""
    if not stats.seen:
        return [], ""
    names = list(stats.seen)
    rates = [100 * stats.passed[n] / stats.seen[n] for n in names]
    colors = [images.GREEN if r >= 80 else "#e69a28" if r >= 50 else images.RED for r in rates]
    figure = images.bars_png(
        names,
        rates,
        xlabel="% of submissions that passed",
        title="Pass rate per check",
        limit=100,
        colors=colors,
        unit="%",
    )
    rate = dict(zip(names, rates))
    rows = [{"name": n, "rate": rate.get(n), "passed": stats.passed[n], "seen": stats.seen[n],
             "carried": stats.carried[n], "withheld": stats.withheld[n],
             "neither": neither_count(stats.carried[n], stats.withheld[n])} for n in stats.checks]  # fmt: skip
    return rows, images.data_uri(figure)


def _mistakes(stats) -> tuple[list[tuple[str, int, str]], str]:
    """Each named mistake, most frequent first, with its count and meaning; and their plot."""
    if not stats.mistakes:
        return [], ""
    common = stats.mistakes.most_common()
    figure = images.bars_png(
        [k for k, _ in common],
        [c for _, c in common],
        xlabel="submissions showing it",
        title="Named mistakes, most frequent first",
        integers=True,
    )
    return [(k, c, describe(k)) for k, c in common], images.data_uri(figure)


def _times(stats) -> dict | None:
    seconds = sorted(s.seconds for s in stats.present)
    if not seconds:
        return None
    top = max(seconds[-1], 1.0)
    step = top / 15
    bins = [step * i for i in range(17)]
    slowest = sorted(stats.check_seconds.items(), key=lambda item: -sum(item[1]) / len(item[1]))[:5]
    figure = images.histogram_png(seconds, bins=bins, xlabel="seconds", title="Grading time per submission")
    return {
        "median": seconds[len(seconds) // 2],
        "slowest": seconds[-1],
        "total": sum(seconds),
        "slowest_checks": [(name, sum(t) / len(t), max(t)) for name, t in slowest],
        "plot": images.data_uri(figure),
    }


def _students(stats) -> list[dict]:
    return [{"name": s.name, "score": s.score, "max_score": s.max_score, "seconds": s.seconds, "status": s.status,
             "percent": 100 * s.score / s.max_score if s.max_score else 0.0,
             "flags": ", ".join(sorted({f.kind for f in s.flags})),
             "mistakes": "; ".join(describe(m) for m in s.mistakes),  # sentences: people read this column
             "graded": _graded(Result.of(s.result).provenance), "late": _late(Result.of(s.result).late),
             "record": decided(s.result)}
            for s in stats.present]  # fmt: skip


def _late(late) -> str:
    """A student's late penalty, where the [deadline] policy applied one or needed a time it did not have."""
    if not isinstance(late, dict):
        return ""
    if late.get("missing_time"):
        return "no submission time: no penalty applied"
    penalty, hours = late.get("late_penalty") or 0, late.get("hours_late") or 0
    extension = f", extension to {late['extension']}" if late.get("extension") else ""
    if not penalty and not extension:
        return ""
    when = f"{late_by(hours)} late" if hours else "on time"
    return f"raw {late.get('raw_score', 0):g}, late penalty {penalty:g} ({when}){extension}"


def _graded(record: dict) -> dict:
    """A student's small line of provenance: the graded file, the first 12 digits of each digest, when."""
    short = {key: str(record.get(key) or "")[:12] for key in ("sha256", "checks_sha256", "settings_sha256")}
    return {"file": str(record.get("graded_file") or ""), "at": str(record.get("graded_at") or ""), **short}


def _changes(found, stats) -> dict | None:
    """--diff OLD: the summary, one row per student that changed (linked to their page), and the shifts' plot."""
    if found is None:
        return None
    from autograder.render.diff import _number, _what, headline, run_field

    by_file = {s.file.removesuffix(".json"): s.name for s in stats.students}
    rows = [{"student": by_file.get(c.student, c.student), "old": c.old_score, "new": c.new_score, "shift": c.shift,
             "checks": ", ".join(f"{m.check} {_number(m.old)} -> {_number(m.new)}" for m in c.checks),
             "what": "; ".join(_what(c))} for c in found.changes]  # fmt: skip
    plot = ""
    if found.shifts:
        low, high = math.floor(min(found.shifts)), math.ceil(max(found.shifts))
        bins = [low - 0.5 + i for i in range(high - low + 2)]
        figure = images.histogram_png(found.shifts, bins=bins, xlabel="new score - old score", title="Score shift")
        plot = images.data_uri(figure)
    return {"old": str(found.old), "headline": headline(found), "rows": rows, "plot": plot,
            "runs": [(run_field(key), ", ".join(a) or "not recorded", ", ".join(b) or "not recorded")
                     for key, a, b in found.runs]}  # fmt: skip


def dashboard(stats, links: dict[str, str], found=None, similar=None) -> str:
    """The class dashboard as one self-contained HTML document; ``links``: student -> their feedback page;
    ``found``: the changes from an earlier results folder (--diff OLD), shown in a section of their own;
    ``similar``: the class's similarity pass (--similarity, similarity.Similarity), its flagged pairs in another."""
    from autograder.render.similarity import section

    checks, checks_plot = _checks(stats)
    mistakes, mistakes_plot = _mistakes(stats)
    return templates().get_template("dashboard.html").render(
        scores=_scores(stats), checks=checks, checks_plot=checks_plot, mistakes=mistakes, mistakes_plot=mistakes_plot,
        flags=stats.flags, times=_times(stats), students=_students(stats), links=links,
        changes=_changes(found, stats), similar=section(similar),
    )  # fmt: skip


def write_report(path: Path, stats, found=None, similar=None) -> Path:
    """Write the dashboard at ``path`` and each student's feedback page in ``<path stem>-feedback/``;
    return that folder.

    Students with no result (a merge with some missing) get neither a page nor a row.
    """
    folder = path.parent / f"{path.stem}-feedback"
    folder.mkdir(parents=True, exist_ok=True)
    links = {}
    for student in stats.present:
        write_student_page(folder / student.page, student.shown, student.result, back=f"../{quote(path.name)}")
        links[student.name] = f"{quote(folder.name)}/{quote(student.page)}"
    path.write_text(dashboard(stats, links, found, similar), encoding="utf-8")
    return folder
