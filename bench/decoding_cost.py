"""What the optional decoding part adds to one grading: the reference graded with the part off and on, interleaved.

    .venv/bin/python bench/decoding_cost.py [--rounds 7] [--submission FILE]

Each round runs ``sdpa-grade grade FILE --json OUT`` twice in fresh processes, once with the default settings (the
part off) and once with tests/decoding_on.toml, one after the other so that the machine's load hits both alike; prints
the median wall time of each, the median of the rounds' differences, and the median ``execution_time`` the results
record; and the part's checks' own seconds (``extra_data.seconds``, median over the rounds).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ON = ROOT / "tests" / "decoding_on.toml"
PART = ("grouped_query_attention", "KVCache", "attend_with_cache")


def _grade(submission: Path, out: Path, config: list[str]) -> tuple[float, dict]:
    command = [str(Path(sys.executable).with_name("sdpa-grade")), "grade", str(submission), "--json", str(out), *config]
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter() - started, json.loads(out.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--submission", type=Path, default=ROOT / "reference" / "attention.py")
    options = parser.parse_args()
    wall = {"off": [], "on": []}
    recorded = {"off": [], "on": []}
    part_seconds = []
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "results.json"
        for _ in range(options.rounds):
            for name, config in (("off", []), ("on", ["--config", str(ON)])):
                seconds, result = _grade(options.submission, out, config)
                wall[name].append(seconds)
                recorded[name].append(result["execution_time"])
                if name == "on":
                    part = [t for t in result["tests"] if t["tags"][0] in PART]
                    part_seconds.append(sum(t["extra_data"]["seconds"] for t in part))
    differences = [on - off for off, on in zip(wall["off"], wall["on"])]
    print(f"{options.rounds} rounds, {options.submission.name}")
    print("| | part off | part on | on - off (median of the rounds' differences) |")
    print("|---|---|---|---|")
    median = statistics.median
    print(
        f"| wall time of sdpa-grade grade, s | {median(wall['off']):.2f} | {median(wall['on']):.2f}"
        f" | {median(differences):+.2f} |"
    )
    print(
        f"| execution_time recorded, s | {median(recorded['off']):.2f} | {median(recorded['on']):.2f}"
        f" | {median(recorded['on']) - median(recorded['off']):+.2f} |"
    )
    print(f"| the part's checks' own seconds | | {median(part_seconds):.2f} | |")


if __name__ == "__main__":
    main()
