"""Draw the pages' screenshots in docs/, each as headless chromium shows it in a 1280 px wide window:

- dashboard.png: the class dashboard of a small class from tests/submissions, graded with a [deadline] and
  `--times` (the late lines and the graded column), `sdpa-grade batch --report`;
- feedback.png: one student's feedback page from the same run (dara's: a failed check and its heat map);
- similarity.png: the similarity view (`--similarity`) of ten students of the measured corpus, one pair listed;
- nbgrader-feedback.png: nbgrader's feedback page, with the course's template, after a real autograde of a notebook
  with mistakes (tests/render/test_accessibility.py's cycle): a withheld check and checks that keep their points,
  wrapped.

    .venv/bin/python docs/make_screenshots.py

Needs the [dev] extra (matplotlib, nbgrader, playwright) and Debian's chromium.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.render.test_accessibility import CHROMIUM, CHROMIUM_ARGS, CORPUS, DEADLINE, nbgrader_feedback  # noqa: E402

OVERLAYS = ROOT / "tests" / "submissions" / "overlays"
# student -> the overlay appended to the reference (None: the reference as it is)
CLASS = {
    "ada": None, "ben": "correct_einsum", "chen": "correct_stable_softmax", "dara": "mistake_mask_inverted",
    "eli": "mistake_query_axis", "fay": "mistake_zero_fill", "gus": "mistake_causal_flipped",
    "hana": "mistake_nan_rows", "ivo": "mistake_divide_by_dk", "jo": "cheat_fused",
    "kim": "mistake_no_max_subtraction", "lou": "mistake_zero_fill",
}  # fmt: skip
# when each handed in: most on time, ivo and kim late, lou with no time at all (flagged for review)
TIMES = {name: "2026-12-01T20:00:00-05:00" for name in [*CLASS, "max"] if name not in ("ivo", "kim", "lou")}
TIMES |= {"ivo": "2026-12-02T05:00:00-05:00", "kim": "2026-12-04T01:00:00-05:00"}
SHOWN = "dara"  # whose feedback page is pictured
WIDTH, HEIGHT = 1280, 900


def _grade(*args: str, cwd: Path) -> None:
    subprocess.run([str(Path(sys.executable).parent / "sdpa-grade"), *args], cwd=cwd, check=True)


def _class(base: Path) -> None:
    """The small class, graded with a deadline and the submission times, its dashboard and feedback pages."""
    reference = (ROOT / "reference" / "attention.py").read_text()
    (base / "submitted").mkdir()
    for name, overlay in CLASS.items():
        extra = "" if overlay is None else "\n" + (OVERLAYS / f"{overlay}.py").read_text()
        (base / "submitted" / f"{name}.py").write_text(reference + extra)
    (base / "submitted" / "max.py").write_text((ROOT / "student_template" / "attention.py").read_text())
    (base / "course.toml").write_text(DEADLINE)
    (base / "times.csv").write_text("student,submitted_at\n" + "".join(f"{n},{t}\n" for n, t in TIMES.items()))
    _grade("batch", "submitted", "--jobs", "2", "--json-dir", "grades", "--config", "course.toml",
           "--times", "times.csv", "--report", "class.html", cwd=base)  # fmt: skip


def _similarity(base: Path) -> None:
    """Ten students of the measured corpus (it ships graded): the similarity view lists one planted copy."""
    for folder, suffix in (("class", ".py"), ("results", ".json")):
        (base / "corpus" / folder).mkdir(parents=True)
        for name in CORPUS:
            shutil.copy(ROOT / "tests" / "similarity" / folder / f"{name}{suffix}", base / "corpus" / folder)
    _grade("summary", "corpus/class", "--json-dir", "corpus/results", "--similarity",
           "--report", "corpus.html", cwd=base)  # fmt: skip


def main() -> None:
    from playwright.sync_api import sync_playwright

    docs = ROOT / "docs"
    with tempfile.TemporaryDirectory() as folder, sync_playwright() as driver:
        base = Path(folder)
        _class(base)
        _similarity(base)
        notebook_page = nbgrader_feedback(base)
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
        page.goto((base / "class.html").as_uri())
        page.screenshot(path=docs / "dashboard.png", full_page=True)
        page.goto((base / "class-feedback" / f"{SHOWN}.html").as_uri())
        page.screenshot(path=docs / "feedback.png", full_page=True)
        page.goto((base / "corpus.html").as_uri())
        pair = page.locator("article.similar-pair").first.bounding_box()
        page.screenshot(path=docs / "similarity.png", full_page=True,
                        clip={"x": 0, "y": pair["y"] - 10, "width": WIDTH, "height": 1400})  # fmt: skip
        page.goto(notebook_page.as_uri())
        start = page.locator('a[name="check_integrity_sdpa"]').bounding_box()
        page.screenshot(path=docs / "nbgrader-feedback.png", full_page=True,
                        clip={"x": 0, "y": start["y"] - 40, "width": WIDTH, "height": 1400})  # fmt: skip
        browser.close()
    print("wrote docs/dashboard.png, docs/feedback.png, docs/similarity.png and docs/nbgrader-feedback.png")


if __name__ == "__main__":
    main()
