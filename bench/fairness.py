"""Print every check whose outcome depends on the run's random inputs, for the submissions under tests/.

    PYTHONPATH=. .venv/bin/python bench/fairness.py [SEED ...] [--only NAME ...]

A mistake must cost the same points on every run. Each overlay submission of tests/submissions
(the ones that do not hang, crash or flood) is graded once per seed (default: 1 to 8) and
compared with what tests/grading_cases.py says it must score.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from autograder.config import load_settings
from autograder.grade import grade
from autograder.sandbox.zygote import Zygote
from tests.grading_cases import CASES

ROOT = Path(__file__).resolve().parent.parent
SLOW_OR_HOSTILE = ("hang", "memory", "flood", "background", "segfault", "os_exit", "sys_exit", "read_stdin")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("seeds", nargs="*", type=int, help="seeds (default: 1 to 8)")
    parser.add_argument("--only", nargs="*", help="grade only these submissions")
    options = parser.parse_args()
    seeds = options.seeds or list(range(1, 9))
    reference = (ROOT / "reference" / "attention.py").read_text()
    settings = load_settings()
    zygote = Zygote()
    zygote.wait_ready()
    unfair = graded = 0
    with tempfile.TemporaryDirectory() as folder:
        for name, (failing, _) in sorted(CASES.items()):
            overlay = ROOT / "tests" / "submissions" / "overlays" / f"{name}.py"
            if not overlay.exists() or name.startswith(SLOW_OR_HOSTILE) or (options.only and name not in options.only):
                continue
            path = Path(folder) / f"{name}.py"
            path.write_text(f"{reference}\n{overlay.read_text()}")
            for seed in seeds:
                grading = grade(path, settings, zygote=zygote, seed=seed)
                graded += 1
                wrong = [
                    t.outcome.check
                    for t in grading.scored
                    if t.max_score and (t.score == 0) != (t.outcome.check in failing)
                ]
                if wrong:
                    unfair += 1
                    print(f"{name}, seed {seed}: unexpected outcome for {', '.join(wrong)}")
    zygote.close()
    print(f"{graded} gradings ({len(seeds)} seeds each): {unfair} with an outcome other than the expected one")


if __name__ == "__main__":
    main()
