"""``sdpa-grade push DIR``: the class's grades of record sent to the LMS by LTI 1.3 (lti.py). It reads the record the
batch decided and the instructor settled, and decides nothing: no submission is read, no late policy applied, and
nothing is sent while a student has no result or the results were graded under different checks or settings."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from autograder.config import Settings
from autograder.course import of_record
from autograder.course.class_folder import Refused, open_class
from autograder.course.class_results import class_results
from autograder.course.lti import push_class
from autograder.course.lti_client import missing_extra, not_ready
from autograder.course.summary import read_results

VERB = "sdpa-grade push"


@dataclass(frozen=True)
class PushOptions:
    """What ``sdpa-grade push`` was asked to do, typed; built once from the command line (cli.py)."""

    folder: Path
    json_dir: Path | None = None  # the results (default: DIR-grades beside DIR)
    dry_run: bool = False  # say what would be sent, and send nothing
    offline: bool = False  # a dry run that asks no platform


def run_push(options: PushOptions, settings: Settings) -> int:
    """Send the class's grades of record (or say what would be sent); 2 with nothing read for a push that cannot send
    (the lms extra or [lti] missing) and nothing sent for a class that cannot be read."""
    if not options.offline:  # before the class is read: nothing read for a push that can't send
        problem = missing_extra() or not_ready(settings.lti)
        if problem:
            print(f"{VERB}: {problem}; nothing sent", file=sys.stderr)
            return 2
    try:
        the_class = open_class(options.folder, options.json_dir, settings)
    except Refused as error:
        print(f"{VERB}: {error}; nothing sent", file=sys.stderr)
        return 2
    of_record.tell(of_record.settle_all(the_class.targets, the_class.known), VERB)
    results, missing = read_results(the_class, VERB)
    if results is None:
        print(f"{VERB}: nothing sent", file=sys.stderr)
        return 2
    if missing:
        print(f"{VERB}: grade them (sdpa-grade batch), then push; nothing sent", file=sys.stderr)
        return 1
    return push_class(class_results(results), settings.lti, options.dry_run or options.offline, options.offline)
