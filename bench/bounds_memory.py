"""Print the grading process's peak memory and time for the parsing attacks on it, beside an honest grading.

    .venv/bin/python bench/bounds_memory.py

Each submission is graded by ``autograder.grade.grade`` in a fresh process of its own (a peak only grows), which
then prints its own peak resident memory (ru_maxrss of RUSAGE_SELF: the trusted process alone, not the sandbox's
workers) and the grading's wall time: the reference (honest); the reference with a 4 MB list literal (refused by
``limits.source_kb`` before anything parses it); the reference with a literal just under that bound (graded in full,
its source parsed once by the static scans); and a notebook of ``limits.notebook_mb`` MiB whose one output holds
nothing but empty lists (the most objects ``json.loads`` can make of a notebook under the size bound).
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "reference" / "attention.py"


def one(path: str) -> None:
    from autograder.config import load_settings
    from autograder.grade import grade

    started = time.perf_counter()
    grading = grade(Path(path), load_settings())
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    outcome = f"ungradable: {grading.ungradable[:90]}" if grading.ungradable else f"score {grading.result['score']:g}"
    if grading.grader_error:
        outcome = f"GRADER ERROR: {grading.grader_error[:90]}"
    print(f"{peak:.0f} MiB\t{seconds:.1f} s\t{outcome}")


def main() -> None:
    from autograder.config import load_settings

    limits = load_settings().limits
    reference = REFERENCE.read_text()
    with tempfile.TemporaryDirectory() as folder:
        files = {"honest (the reference)": REFERENCE}
        big = Path(folder) / "big" / "attention.py"
        big.parent.mkdir()
        big.write_text(reference + "_big = [" + "0, " * ((4 << 20) // 3) + "]\n")
        files["4 MB list literal"] = big
        under = Path(folder) / "under" / "attention.py"
        under.parent.mkdir()
        room = (limits.source_kb << 10) - len(reference.encode()) - 64
        under.write_text(reference + "_big = [" + "0, " * (room // 3) + "]\n")
        files[f"a list literal just under source_kb ({under.stat().st_size >> 10} KiB)"] = under
        notebook = Path(folder) / "lists.ipynb"
        lists = "[" + "[]," * (((limits.notebook_mb << 20) - len(reference) * 2 - 4096) // 3) + "[]]"
        cell = {"cell_type": "code", "metadata": {}, "source": reference, "execution_count": 1, "outputs": []}
        text = json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
        output = '{"output_type": "execute_result", "execution_count": 1, "metadata": {}, "data": {"x": ' + lists + "}}"
        notebook.write_text(text.replace('"outputs": []', f'"outputs": [{output}]'))
        files[f"notebook of {notebook.stat().st_size / (1 << 20):.1f} MiB of empty lists"] = notebook
        print("submission\tpeak of the grading process\twall time\toutcome")
        for name, path in files.items():
            done = subprocess.run(
                [sys.executable, __file__, "--one", str(path)], capture_output=True, text=True, cwd=ROOT, check=False
            )
            print(f"{name}\t{done.stdout.strip() or done.stderr[-300:]}", flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--one"]:
        one(sys.argv[2])
    else:
        main()
