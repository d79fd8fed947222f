"""Print the grading process's peak memory while it grades a submission that forges hostile replies.

    .venv/bin/python bench/wire_memory.py

Grades, in this process, the reference and then tests/submissions/overlays/wire_bomb_reply.py
(replies of ~300 MB of '[],', a header nested 100,000 deep, a tensor of absurd shape, nulls
where tensors belong), and prints this process's peak resident memory (ru_maxrss) after each,
with the outcome of the checks the forged replies hit.
"""

from __future__ import annotations

import resource
import tempfile
from pathlib import Path

from autograder.config import load_settings
from autograder.grade import grade

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "reference" / "attention.py"
BOMB = ROOT / "tests" / "submissions" / "overlays" / "wire_bomb_reply.py"


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    settings = load_settings()
    with tempfile.TemporaryDirectory() as folder:
        bomb = Path(folder) / "attention.py"
        bomb.write_text(f"{REFERENCE.read_text()}\n\n{BOMB.read_text()}")
        honest = grade(REFERENCE, settings)
        print(f"after grading the reference ({honest.result['score']:g}/55): peak {peak_mib():.0f} MiB")
        hostile = grade(bomb, settings)
        print(
            f"after grading wire_bomb_reply ({hostile.result['score']:g}/55, grader error: "
            f"{bool(hostile.grader_error)}): peak {peak_mib():.0f} MiB"
        )
        for test in hostile.result["tests"]:
            if test["name"].split(": ")[1] in ("output_values", "scale_values", "causal_square", "padding_lengths"):
                print(f"  {test['name']}: {test['score']:g}/{test['max_score']:g}  {test['output'][:110]}")


if __name__ == "__main__":
    main()
