"""Draw docs/dashboard.png and docs/feedback.png: a small class from tests/submissions, graded with
`sdpa-grade --batch --report`, and its pages as headless chromium shows them.

    .venv/bin/python docs/make_screenshots.py

Needs the [report] extra (matplotlib) and Debian's chromium.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OVERLAYS = ROOT / "tests" / "submissions" / "overlays"
# student -> the overlay appended to the reference (None: the reference as it is)
CLASS = {
    "ada": None, "ben": "correct_einsum", "chen": "correct_stable_softmax", "dara": "mistake_mask_inverted",
    "eli": "mistake_query_axis", "fay": "mistake_zero_fill", "gus": "mistake_causal_flipped",
    "hana": "mistake_nan_rows", "ivo": "mistake_divide_by_dk", "jo": "cheat_fused",
    "kim": "mistake_no_max_subtraction", "lou": "mistake_zero_fill",
}  # fmt: skip
SHOWN = "dara"  # whose feedback page is pictured
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars"]  # fmt: skip


def screenshot(page: Path, out: Path, height: int) -> None:
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(["chromium", *FLAGS, f"--user-data-dir={profile}", f"--screenshot={out}",
                        f"--window-size=1100,{height}", page.as_uri()],
                       check=True, capture_output=True, timeout=120)  # fmt: skip


def main() -> None:
    reference = (ROOT / "reference" / "attention.py").read_text()
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        (base / "submitted").mkdir()
        for name, overlay in CLASS.items():
            extra = "" if overlay is None else "\n" + (OVERLAYS / f"{overlay}.py").read_text()
            (base / "submitted" / f"{name}.py").write_text(reference + extra)
        (base / "submitted" / "max.py").write_text((ROOT / "student_template" / "attention.py").read_text())
        grade = Path(sys.executable).parent / "sdpa-grade"
        subprocess.run([str(grade), "--batch", str(base / "submitted"), "--jobs", "2",
                        "--json-dir", str(base / "grades"),
                        "--report", str(base / "class.html")], check=True)  # fmt: skip
        screenshot(base / "class.html", ROOT / "docs" / "dashboard.png", 3350)
        screenshot(base / "class-feedback" / f"{SHOWN}.html", ROOT / "docs" / "feedback.png", 1250)
    print("wrote docs/dashboard.png and docs/feedback.png")


if __name__ == "__main__":
    main()
