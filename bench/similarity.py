"""How long the similarity pass takes for a class of 40, and how well it finds the corpus's planted copies.

    .venv/bin/python bench/similarity.py [--students 40] [--repeat 3]

The class is the corpus of tests/similarity (its submissions, and the results they were graded to, committed
beside them): its 32 independent students and the first planted copies, N in all. The pass is timed whole, as
``--similarity`` runs it after a batch: every graded file read back and checked against its SHA-256, the handed-out
code's fingerprints, every pair compared, similarity.csv written. It runs in one process (one core); the bound it
must keep is 10 s on two cores. Precision and recall are counted over every pair of the whole corpus: a copy is
found when the pair (copy, its source) is flagged; any other flagged pair is a false alarm.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from autograder.config import load_settings
from autograder.course import similarity
from autograder.read.handed_in import take
from autograder.render.similarity import write_csv

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "similarity"


def load(limit: int | None = None) -> tuple[dict[str, Path], dict[str, dict]]:
    """The corpus's first ``limit`` students: every independent one first, then the planted copies."""
    files = sorted((CORPUS / "class").glob("*.py"), key=lambda f: (f.stem.startswith("copy_of_"), f.stem))[:limit]
    roster = {f.stem: f for f in files}
    results = {name: json.loads((CORPUS / "results" / f"{name}.json").read_text()) for name in roster}
    return roster, results


def run(roster: dict[str, Path], results: dict[str, dict], folder: Path) -> similarity.Similarity:
    limits = load_settings(environ={}).limits
    sources, skipped = {}, {}
    for name, path in roster.items():
        sources[name], skipped[name] = similarity.read_source(take(path, limits), results[name], limits)
    given = similarity.given_fingerprints(similarity.given_code(ROOT))
    found = similarity.similarity(results, sources, given, skipped)
    write_csv(folder / "similarity.csv", found)
    return found


def scored(found: similarity.Similarity) -> dict[str, float]:
    planted = {(p.a, p.b) for p in found.pairs if p.a == f"copy_of_{p.b}" or p.b == f"copy_of_{p.a}"}
    flagged = {(p.a, p.b) for p in found.flagged}
    independent = [p for p in found.pairs if not p.a.startswith("copy_of_") and not p.b.startswith("copy_of_")]
    hits = len(planted & flagged)
    return {
        "planted": len(planted),
        "found": hits,
        "recall": hits / len(planted) if planted else 1.0,
        "flagged": len(flagged),
        "precision": hits / len(flagged) if flagged else 1.0,
        "false_alarms": len(flagged - planted),
        "independent_pairs": len(independent),
        "independent_flagged": sum(p.flagged for p in independent),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    roster, results = load(args.students)
    times, cpu = [], []
    with tempfile.TemporaryDirectory() as folder:
        run(roster, results, Path(folder))  # warm: the modules the pass imports, as a batch has them already
        for _ in range(args.repeat):
            started, started_cpu = time.perf_counter(), time.process_time()
            run(roster, results, Path(folder))
            times.append(time.perf_counter() - started)
            cpu.append(time.process_time() - started_cpu)
        everyone = run(*load(), Path(folder))
    n = len(roster)
    print(f"similarity pass, a class of {n} ({n * (n - 1) // 2} pairs): wall best {min(times):.2f} s, worst"
          f" {max(times):.2f} s of {args.repeat}; CPU best {min(cpu):.2f} s, worst {max(cpu):.2f} s"
          " (one core)")  # fmt: skip
    s = scored(everyone)
    print(f"corpus: {s['found']}/{s['planted']} planted copies flagged (recall {s['recall']:.0%}),"
          f" precision {s['precision']:.0%} ({s['false_alarms']} false alarm(s) among {len(everyone.pairs)} pairs);"
          f" {s['independent_flagged']} flagged among the {s['independent_pairs']} independent pairs")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
