"""Points of the submissions under tests/submissions/overlays under both `[scoring] borrowed` policies.

    PYTHONPATH=. .venv/bin/python bench/carry_forward.py [--only NAME ...] [--seed N] [--prefix mistake_ ...]
        [--config FILE]

Each overlay (appended to the reference, as tests/grading/test_grading.py builds the class) is graded once per
policy with one shared worker zygote, and a Markdown table is printed: the points under "deduct" (a mistake
costs every check it breaks), under "carry_forward" (the default), and the checks whose points the default
keeps. The timing checks are graded too: they are part of what a mistake cost.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from autograder.config import load_settings
from autograder.grade import grade
from autograder.sandbox.zygote import Zygote
from autograder.scoring import GATED

ROOT = Path(__file__).resolve().parent.parent
SLOW_OR_HOSTILE = ("hang", "memory", "flood", "background", "segfault", "os_exit", "sys_exit", "read_stdin", "kill")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="grade only these overlays (names without .py)")
    parser.add_argument("--prefix", nargs="*", default=[""], help="grade only overlays whose name starts so")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--config", help="settings to start from (fewer timing rounds, say); the policy is set here")
    options = parser.parse_args()
    reference = (ROOT / "reference" / "attention.py").read_text()
    default = load_settings(options.config)
    policies = {name: default.replace("scoring", borrowed=name) for name in ("deduct", "carry_forward")}
    names = sorted(
        path.stem
        for path in (ROOT / "tests" / "submissions" / "overlays").glob("*.py")
        if path.stem.startswith(tuple(options.prefix)) and not path.stem.startswith(SLOW_OR_HOSTILE)
    )
    if options.only:
        names = [name for name in names if name in options.only]
    zygote = Zygote()
    zygote.wait_ready()
    started = time.perf_counter()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for name in names:
            path = Path(folder) / f"{name}.py"
            overlay = (ROOT / "tests" / "submissions" / "overlays" / path.name).read_text()
            path.write_text(f"{reference}\n\n# --- {name}.py ---\n{overlay}")
            scores = {}
            for policy, settings in policies.items():
                grading = grade(path, settings, zygote=zygote, seed=options.seed)
                scores[policy] = grading
            kept = [t.outcome.check for t in scores["carry_forward"].scored if t.carried]
            gates = [
                t.outcome.check
                for t, before in zip(scores["carry_forward"].scored, scores["deduct"].scored)
                if t.outcome.category in GATED and t.score > before.score
            ]
            total = {policy: sum(t.score for t in g.scored) for policy, g in scores.items()}
            maximum = sum(t.max_score for t in scores["deduct"].scored)
            rows.append((name, total["deduct"], total["carry_forward"], maximum, kept + gates))
            print(f"{name}: {total['deduct']:g} -> {total['carry_forward']:g} of {maximum:g}", flush=True)
    zygote.close()
    print(f"\n{len(names)} submissions x 2 policies, seed {options.seed}, {time.perf_counter() - started:.0f} s\n")
    print("| submission | deduct | carry_forward (default) | kept |")
    print("|---|---|---|---|")
    for name, before, after, maximum, kept in rows:
        print(f"| {name} | {before:g}/{maximum:g} | {after:g}/{maximum:g} | {', '.join(kept) or '-'} |")


if __name__ == "__main__":
    main()
