"""What a batch prints and writes once its students are graded, and ``--summary-only`` over results already written
(the merge of the shards): the class's summary, ``--diff``'s changes, ``--similarity``'s pairs and ``--report``'s
dashboard, each worded by render/ from the fields computed in course/. ``args`` is the batch's options
(batch.BatchOptions)."""

from __future__ import annotations

import sys
from pathlib import Path

from autograder import provenance
from autograder.config import Settings
from autograder.course.class_results import ClassResults, class_results
from autograder.course.grades_csv import tell, write_grades
from autograder.course.resume import mark_output
from autograder.read.handed_in import HandedIn
from autograder.record import Result
from autograder.render.inert import inert, shown
from autograder.render.terminal import summary
from autograder.report import load


def said_by(args) -> str:
    """Who a message is from: the verb that runs (``sdpa-grade push``, ``summary`` or ``batch``): every message of a
    verb names it."""
    return f"sdpa-grade {'push' if args.push else 'summary' if args.summary_only else 'batch'}"


def summarise_only(roster: dict, targets: dict, args, settings: Settings, skipped: dict) -> int:
    """--summary-only: summary and CSV of the results already written, by any machine (the merge of the shards).

    A merge that is not whole says so and writes nothing: a CSV with students left out would be
    uploaded as the class's grades. It names every student with no result yet (what to grade
    next) and exits 1; ``--partial`` asks for the summary and the CSV of what there is all the
    same, the missing students' rows marked ``missing``. Results graded with other checks or other
    settings are not added up at all (exit 2): each group is named, with where its settings came from.
    """
    missing = [name for name in roster if not targets[name].is_file()]
    mixed = why_not_merged({name: load(targets[name]) for name in roster if name not in missing})
    if mixed:
        print(f"{said_by(args)}: {mixed}{'; nothing sent' if args.push else ''}", file=sys.stderr)
        return 2
    if missing:
        print(
            f"{said_by(args)}: {len(missing)} of {len(roster)} students have no result yet: "
            f"{', '.join(shown(name) for name in missing)}",
            file=sys.stderr,
        )
    if missing and args.push:
        print("sdpa-grade push: grade them (sdpa-grade batch), then push; nothing sent", file=sys.stderr)
        return 1
    if missing and not args.partial:
        wrote = f"no CSV written ({args.csv}); " if args.csv else ""
        print(
            f"sdpa-grade: {wrote}grade them (run their shard again), then merge; --partial merges what there is",
            file=sys.stderr,
        )
        return 1
    results = {name: None if name in missing else load(targets[name]) for name in roster}
    stats = class_results(results)
    written = write_grades(args, stats)
    print(inert(summary(stats, skipped)))
    found = changes_since(args, targets, stats)
    similar = similarity_pass(args, roster, results, next(iter(targets.values())).parent, settings) if targets else None
    write_dashboard(args, stats, found, similar)
    unmatched = tell(written)
    if args.push:
        from autograder.course.lti import push_class

        return push_class(stats, settings.lti, args.dry_run, args.offline) or (1 if missing or unmatched else 0)
    return 1 if missing or unmatched else 0


def write_dashboard(args, stats: ClassResults, found, similar) -> None:
    """--report FILE: the class's dashboard (with the Changes and similarity sections asked for) and each student's
    feedback page, after a batch and after --summary-only alike."""
    if not args.report:
        return
    from autograder.render.dashboard import write_report

    pages = write_report(args.report, stats, found, similar)
    mark_output(pages)
    print(f"class dashboard: {args.report} (feedback pages in {pages})", file=sys.stderr)


def similarity_pass(args, handed: dict[str, HandedIn], results: dict, out: Path, settings: Settings):
    """--similarity: every pair of the class compared (similarity.py), ``similarity.csv`` written in the results
    folder and its one line printed; the Similarity (for the dashboard), or None when not asked."""
    if not args.similarity:
        return None
    from autograder.course import similarity
    from autograder.render.similarity import summary_line, write_csv

    sources, skipped = {}, {}
    for name, record in handed.items():
        sources[name], skipped[name] = similarity.read_source(record, results.get(name), settings.limits)
    given = similarity.given_fingerprints(similarity.given_code(off=settings.parts.off()))
    found = similarity.similarity(results, sources, given, skipped)
    write_csv(out / SIMILARITY_CSV, found)
    print(inert(summary_line(found)))
    return found


SIMILARITY_CSV = "similarity.csv"


def changes_since(args, targets: dict, stats: ClassResults):
    """--diff OLD: print what changed from OLD to this batch's results (its students only); the Diff, or None."""
    if args.diff is None:
        return None
    from autograder.course.diff import diff
    from autograder.render.diff import lines

    out = next(iter(targets.values())).parent if targets else args.diff
    found = diff(args.diff, out)
    print("\n" + "\n".join(lines(found)))
    return found


def why_not_merged(results: dict[str, dict]) -> str:
    """Why these results cannot be merged (one line naming each group of students graded alike), or "" when they
    were all graded with the same checks and settings. A grader's own failure graded nothing and is left out."""
    groups: dict[tuple[str, str], list[str]] = {}
    for name, result in results.items():
        if not Result.of(result).grader_error:
            groups.setdefault(provenance.grouping(result), []).append(name)
    if len(groups) < 2:
        return ""

    def described(key: tuple[str, str], names: list[str]) -> str:
        checks, settings = key
        if not checks:
            return f"{', '.join(shown(n) for n in names)} (no provenance: graded by an older grader)"
        source = Result.of(results[names[0]]).provenance.get("settings_from", "?")
        return (
            f"{', '.join(shown(n) for n in names)} (settings from {inert(str(source), keep_newlines=False)},"
            f" settings {settings[:12]}, checks {checks[:12]})"
        )

    named = "; ".join(described(key, names) for key, names in groups.items())
    return (
        f"these results were graded with different checks or settings, and a merge would mix them: {named}."
        " Grade them again with one settings file (the batch with --force and the same --config), then merge"
    )
