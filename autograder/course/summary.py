"""``sdpa-grade summary`` over results already written (the merge of the shards), and what a batch prints and writes
once its students are graded: the class's summary, ``--diff``'s changes, ``--similarity``'s pairs and ``--report``'s
dashboard, each worded by render/ from the fields computed in course/, as the verb's ``Exports`` ask."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from autograder import provenance
from autograder.config import Settings
from autograder.course import of_record
from autograder.course.class_folder import Class, Exports, Refused, check_exports, open_class, results_folder
from autograder.course.class_results import ClassResults, class_results
from autograder.course.grades_csv import tell, write_grades
from autograder.course.resume import mark_output
from autograder.read.handed_in import HandedIn, take
from autograder.record import Result
from autograder.render.inert import inert, shown
from autograder.render.terminal import summary
from autograder.report import load


@dataclass(frozen=True)
class SummaryOptions:
    """What ``sdpa-grade summary`` was asked to do, typed; built once from the command line (cli.py)."""

    folder: Path
    json_dir: Path | None = None  # the results (default: DIR-grades beside DIR)
    shard: tuple[int, int] | None = None
    partial: bool = False  # summarise and write the CSV with students missing (their rows say missing)
    exports: Exports = Exports()


VERB = "sdpa-grade summary"


def run_summary(options: SummaryOptions, settings: Settings) -> int:
    """``sdpa-grade summary``: the summary, files and pages of the results already written, by any machine (the merge
    of the shards); their grades of record read, never decided again."""
    try:
        check_exports(options.exports, results_folder(options.folder, options.json_dir))
        the_class = open_class(options.folder, options.json_dir, settings, options.shard)
    except Refused as error:
        print(f"{VERB}: {error}", file=sys.stderr)
        return 2
    of_record.tell(of_record.settle_all(the_class.targets, the_class.known), VERB)
    results, missing = read_results(the_class)
    if results is None:
        return 2
    if missing and not options.partial:
        wrote = f"no CSV written ({options.exports.csv}); " if options.exports.csv else ""
        print(f"{VERB}: {wrote}grade them (run their shard again), then merge; --partial merges what there is",
              file=sys.stderr)  # fmt: skip
        return 1
    stats = class_results(results)
    exports = options.exports
    written = write_grades(exports, stats)
    print(inert(summary(stats, the_class.skipped)))
    found = changes_since(exports, the_class.targets, stats)
    similar = None
    if exports.similarity:
        handed = {name: take(the_class.roster[name], settings.limits) for name in the_class.roster}
        similar = similarity_pass(exports, handed, results, the_class.out, settings)
    write_dashboard(exports, stats, found, similar)
    unmatched = tell(written, VERB)
    return 1 if missing or unmatched else 0


def read_results(the_class: Class, verb: str = VERB) -> tuple[dict | None, list[str]]:
    """Each student's result (None: missing) and the students missing, said on stderr; (None, []) where the results
    were graded with other checks or other settings and cannot be counted together (the verb exits 2).

    A merge that is not whole says so, naming every student with no result yet (what to grade next); results graded
    with other checks or other settings are not added up at all: each group is named, with where its settings came
    from."""
    targets = the_class.targets
    missing = [name for name in targets if not targets[name].is_file()]
    mixed = why_not_merged({name: load(targets[name]) for name in targets if name not in missing})
    if mixed:
        print(f"{verb}: {mixed}", file=sys.stderr)
        return None, []
    if missing:
        print(f"{verb}: {len(missing)} of {len(targets)} students have no result yet: "
              f"{', '.join(shown(name) for name in missing)}", file=sys.stderr)  # fmt: skip
    return {name: None if name in missing else load(targets[name]) for name in targets}, missing


def write_dashboard(exports: Exports, stats: ClassResults, found, similar) -> None:
    """--report FILE: the class's dashboard (with the Changes and similarity sections asked for) and each student's
    feedback page, after a batch and a summary alike."""
    if not exports.report:
        return
    from autograder.render.dashboard import write_report

    pages = write_report(exports.report, stats, found, similar)
    mark_output(pages)
    print(f"class dashboard: {exports.report} (feedback pages in {pages})", file=sys.stderr)


def similarity_pass(exports: Exports, handed: dict[str, HandedIn], results: dict, out: Path, settings: Settings):
    """--similarity: every pair of the class compared (similarity.py), ``similarity.csv`` written in the results
    folder and its one line printed; the Similarity (for the dashboard), or None when not asked."""
    if not exports.similarity:
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


def changes_since(exports: Exports, targets: dict, stats: ClassResults):
    """--diff OLD: print what changed from OLD to this batch's results (its students only); the Diff, or None."""
    if exports.diff is None:
        return None
    from autograder.course.diff import diff
    from autograder.render.diff import lines

    out = next(iter(targets.values())).parent if targets else exports.diff
    found = diff(exports.diff, out)
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
