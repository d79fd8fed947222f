"""Every page the grader writes, opened in headless Chromium at 1280x900: no horizontal scroll, and no serious or
critical violation of axe-core's WCAG 2.1 A and AA rules. The pages come from real runs: `sdpa-grade grade FILE --html`
(late, under a [deadline]), the class dashboard of a class with a deadline, the similarity view of ten students
of the measured corpus (`--similarity`), and nbgrader's feedback page from a real autograde and generate_feedback."""

from __future__ import annotations

import ast
import html
import shutil
from pathlib import Path

import nbformat
import pytest
from traitlets.config.loader import PyFileConfigLoader

from autograder.course import similarity
from autograder.render import images
from autograder.render.similarity import section
from tests.helpers import BIN, ROOT, SOLUTION_MARKERS, answered, nbgrader, nbgrader_course, run

CHROMIUM = "/usr/bin/chromium"
SDPA = "scaled_dot_product_attention"
# headless, and off the (closed) network: no update, sync or first-run traffic
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run"]  # fmt: skip
WIDTH, HEIGHT = 1280, 900
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
BLOCKING = {"serious", "critical"}
DEADLINE = """[deadline]
due = "2026-12-01T23:59:00-05:00"
policy = "per_day"
percent = 10
max_late = 5
[deadline.extensions]
carol = "2026-12-05T23:59:00-05:00"
"""
ONE_WORD = "a_student_whose_name_is_one_word" * 4  # 128 characters, in every table that names students
# bob and mallory late, carol late inside her extension, dave on time, erin and ONE_WORD with no time at all
TIMES = """student,submitted_at
alice,2026-12-01T20:00:00-05:00
bob,2026-12-02T03:00:00-05:00
carol,2026-12-04T03:00:00-05:00
mallory,2026-12-05T03:00:00-05:00
dave,2026-12-01T10:00:00-05:00
"""
DUE_UTC = "2026-12-02 04:59:00 UTC"  # DEADLINE's due date, for nbgrader's gradebook
LATE = "2026-12-03 06:00:00.000000 UTC"  # nbgrader's timestamp.txt, its default format
CORPUS = ["copy_of_student27", "student27", *(f"student{i:02d}" for i in range(8))]
DOCUMENTED_PAIR = ("copy_of_student12", "student12")  # a planted copy whose files keep their docstrings
SCALE_BY_D_K = "import math\n\n\ndef scale_scores(scores, d_k):\n    return scores / d_k\n"


def _sdpa_grade(*args: str, cwd: Path) -> None:
    result = run([str(BIN / "sdpa-grade"), *args], cwd=cwd, timeout=120)
    assert result.returncode == 0, f"sdpa-grade {' '.join(args)}:\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}"


def nbgrader_feedback(base: Path) -> Path:
    """bob's notebook, handed in late, through nbgrader's autograde (with DEADLINE) and generate_feedback, with the
    course's template."""
    course, env = nbgrader_course(base)
    nbgrader("db", "assignment", "add", "sdpa", f"--duedate={DUE_UTC}", cwd=course, env=env)
    (course / "course.toml").write_text(DEADLINE)
    release = nbformat.read(course / "release" / "sdpa" / "sdpa.ipynb", as_version=4)
    source = nbformat.read(course / "source" / "sdpa" / "sdpa.ipynb", as_version=4)
    # scores divided by d_k (a failed check), an attention that forgets to scale (its own checks fail: its integrity
    # check is withheld, and the module's checks built on it keep their points), one wrong answer
    sdpa = next(c.source for c in source.cells if c.metadata.get("nbgrader", {}).get("grade_id") == SDPA)
    sdpa = SOLUTION_MARKERS.sub("", sdpa)
    unscaled = sdpa.replace("scale_scores(attention_scores(Q, K), d_k)", "attention_scores(Q, K)")
    assert unscaled != sdpa
    bob = {"scale_scores": SCALE_BY_D_K, SDPA: unscaled, "q_variance": "q_variance = 8"}
    submitted = course / "submitted" / "bob" / "sdpa" / "sdpa.ipynb"
    submitted.parent.mkdir(parents=True)
    nbformat.write(answered(release, source, bob), submitted)
    (submitted.parent / "timestamp.txt").write_text(LATE)  # a day late: the table of contents names the penalty
    settings = f"--GradeNotebook.settings_file={course / 'course.toml'}"
    nbgrader("autograde", "sdpa", "--force", settings, cwd=course, env=env)
    nbgrader("generate_feedback", "sdpa", "--force", cwd=course, env=env)
    return course / "feedback" / "bob" / "sdpa" / "sdpa.html"


def _feedback(base: Path) -> Path:
    _sdpa_grade("grade", "class/bob.py", "--config", "course.toml", "--submitted-at", "2026-12-03T03:00:00-05:00",
                "--html", "bob.html", cwd=base)  # fmt: skip
    return base / "bob.html"


def _dashboard(base: Path) -> Path:
    _sdpa_grade("batch", "class", "--jobs", "2", "--json-dir", "grades", "--config", "course.toml",
                "--times", "times.csv", "--similarity", "--report", "class.html", cwd=base)  # fmt: skip
    return base / "class.html"


def _similarity(base: Path) -> Path:
    """Ten students of the measured corpus, which ships graded: one pair (a planted copy) is listed, side by side."""
    for folder in ("class", "results"):
        (base / "corpus" / folder).mkdir(parents=True)
        for name in CORPUS:
            suffix = ".py" if folder == "class" else ".json"
            shutil.copy(ROOT / "tests" / "similarity" / folder / f"{name}{suffix}", base / "corpus" / folder)
    _sdpa_grade("summary", "corpus/class", "--json-dir", "corpus/results", "--similarity",
                "--report", "corpus.html", cwd=base)  # fmt: skip
    assert 'class="side-by-side"' in (base / "corpus.html").read_text(encoding="utf-8"), "no pair listed"
    return base / "corpus.html"


class Pages:
    """Each kind of page, written by the real commands when a test first asks for it, once for the module: each test
    pays for the commands of its own page (all five at once took 101 s in one test's setup)."""

    MAKERS = {
        "feedback": _feedback,
        "dashboard": _dashboard,
        "dashboard's feedback page": lambda base: base / "class-feedback" / "bob.html",  # written with the dashboard
        "similarity": _similarity,
        "nbgrader feedback": nbgrader_feedback,
    }

    def __init__(self, base: Path):
        self.base, self.made = base, {}

    def __getitem__(self, kind: str) -> Path:
        if kind == "dashboard's feedback page":
            self["dashboard"]
        if kind not in self.made:
            self.made[kind] = self.MAKERS[kind](self.base)
        return self.made[kind]


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> Pages:
    """The pages of each kind (``Pages``), in a class folder with a late student and a deadline."""
    if shutil.which(CHROMIUM) is None:
        pytest.skip(f"no {CHROMIUM} here (Debian's chromium; .ci/install-chromium installs it)")
    base = tmp_path_factory.mktemp("pages")
    (base / "course.toml").write_text(DEADLINE)
    (base / "times.csv").write_text(TIMES)
    shutil.copytree(ROOT / "examples" / "class", base / "class")
    shutil.copy(base / "class" / "alice.py", base / "class" / "dave.py")
    shutil.copy(base / "class" / "bob.py", base / "class" / "erin.py")
    shutil.copy(base / "class" / "bob.py", base / "class" / f"{ONE_WORD}.py")
    return Pages(base)


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium, driven by playwright (never a browser of playwright's own)."""
    playwright = pytest.importorskip("playwright.sync_api", reason="playwright is in the [dev] extra")
    pytest.importorskip("axe_playwright_python", reason="axe-playwright-python is in the [dev] extra")
    if shutil.which(CHROMIUM) is None:
        pytest.skip(f"no {CHROMIUM} here (Debian's chromium; .ci/install-chromium installs it)")
    with playwright.sync_playwright() as driver:
        chromium = driver.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def _blocking(violations: list[dict]) -> str:
    """The serious and critical violations, each as its rule, its count and its first two nodes."""
    lines = []
    for violation in violations:
        if violation["impact"] in BLOCKING:
            nodes = "; ".join(" ".join(map(str, n["target"])) + ": " + n["html"][:160] for n in violation["nodes"][:2])
            lines.append(f"{violation['id']} ({violation['impact']}, {len(violation['nodes'])} nodes): {nodes}")
    return "\n".join(lines)


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "kind", ["feedback", "dashboard", "dashboard's feedback page", "similarity", "nbgrader feedback"]
)
def test_page_fits_1280_and_passes_axe(browser, pages, kind):
    """The page scrolls only downwards at 1280 px, and axe-core finds no serious or critical WCAG 2.1 AA violation."""
    from axe_playwright_python.sync_playwright import Axe

    page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
    try:
        page.goto(pages[kind].as_uri())
        width, inner = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        found = Axe().run(page, options={"runOnly": {"type": "tag", "values": AXE_TAGS}})
    finally:
        page.close()
    blocking = _blocking(found.response["violations"])
    problems = [f"axe-core (WCAG 2.1 A, AA) found:\n{blocking}"] if blocking else []
    if width > inner:
        problems.append(f"{width} px wide in a {inner} px window: it scrolls sideways")
    assert not problems, f"{kind} ({pages[kind]}):\n" + "\n".join(problems)


def _docstring_lines(text: str) -> set[int]:
    """The lines of every docstring of a module, its classes and its functions, read from its tree."""
    lines = set()
    for node in ast.walk(ast.parse(text)):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                lines.update(range(value.lineno, value.end_lineno + 1))
    return lines


def test_side_by_side_highlights_code_and_no_docstring():
    """A planted copy's two files side by side: the shared code is highlighted, no docstring, comment or blank line
    (the comparison sets them aside, as the section says)."""
    texts = {name: (ROOT / "tests" / "similarity" / "class" / f"{name}.py").read_text() for name in DOCUMENTED_PAIR}
    given = similarity.given_fingerprints(similarity.given_code(ROOT))
    codes = {name: similarity.code_of(text, given) for name, text in texts.items()}
    regions = similarity.matching_lines(*codes.values())
    pair = similarity.Pair(*texts, 0.9, 9.0, 5.0, 5.0, True, *regions)
    kept = {name: similarity.code_lines(text) for name, text in texts.items()}  # as the class's comparison hands them
    shown = section(similarity.Similarity([pair], 0.2, 1.0, sources=texts, kept=kept))["pairs"][0]
    for side, text in zip(("left", "right"), texts.values()):
        marked = {line["number"] for line in shown[side] if line["match"]}
        lines = text.splitlines()
        assert len(marked) > 20, side
        assert not marked & _docstring_lines(text), f"{side}: docstring lines highlighted"
        bare = [n for n in marked if not lines[n - 1].strip() or lines[n - 1].lstrip().startswith("#")]
        assert not bare, f"{side}: blank or comment lines highlighted: {bare}"


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_heat_map_is_shown_at_its_own_size(browser, pages):
    """The feedback page shows each heat map unscaled, so that its weights (LABEL_POINTS at 100 dpi) are at least
    12 px high, and gives each picture a text alternative and a table of the same numbers."""
    page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
    try:
        page.goto(pages["feedback"].as_uri())
        shown = page.evaluate(
            "Array.from(document.querySelectorAll('img.attention'), i => [i.width, i.naturalWidth, i.alt,"
            " i.closest('figure') ? i.closest('figure').querySelectorAll('table.weights td').length : 0])"
        )
    finally:
        page.close()
    assert shown, "no heat map on the page"
    for width, natural, alt, cells in shown:
        assert width == natural, f"shown {width} px wide, drawn {natural} px"
        assert "expected weights beside yours" in alt and cells >= 16, (alt, cells)
    assert images.LABEL_POINTS * 100 / 72 >= 12  # points at 100 dpi, in pixels


def _withheld_integrity_sdpa() -> list:
    """integrity_sdpa's outputs in nbgrader's cell, from the real scoring: withheld, since the function it gates
    fails its own check (its note, and nbgrader's partial credit 0 as an execute_result)."""
    from autograder.config import load_settings
    from autograder.nbgrader_path.cell_feedback import verdict_outputs
    from autograder.plugin import Outcome
    from autograder.scoring import score
    from autograder.status import Category, Status

    outcomes = [
        Outcome("sdpa_matches_torch", SDPA, Category.MATCHES_TORCH, Status.FAILED, message="values differ."),
        Outcome("integrity_sdpa", SDPA, Category.INTEGRITY, Status.PASSED),
    ]
    scored = {item.outcome.check: item for item in score(outcomes, load_settings(environ={}))}
    return verdict_outputs("integrity_sdpa", scored["integrity_sdpa"])


@pytest.mark.parametrize("shown", ["as cell_feedback writes it", "text/plain alone"])
def test_partial_credit_is_never_a_bare_out_0(shown):
    """A graded cell's execute_result (nbgrader's partial credit: a withheld check's 0) is shown on the course's
    feedback page without an "Out[ ]:" prompt: its own text/html where it has one, else the points it gives (the
    cell rendered by nbconvert with the course's nbgrader_config.py and template, as generate_feedback renders it)."""
    import nbgrader
    from nbconvert import HTMLExporter
    from nbformat.v4 import new_code_cell, new_notebook

    config = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT / "assignments")).load_config()
    # the stylesheet generate_feedback adds to the template's search path
    bootstrap = Path(nbgrader.__file__).parent / "server_extensions/formgrader/static/node_modules/bootstrap/dist/css"
    note, credit = _withheld_integrity_sdpa()
    assert credit.output_type == "execute_result" and credit.data["text/plain"] == "0"
    if shown == "text/plain alone":
        credit.data = {"text/plain": "0"}
    cell = new_code_cell("# Hidden check integrity_sdpa (2 points)", outputs=[note, credit])
    cell.metadata["nbgrader"] = {"grade": True, "solution": False, "locked": True, "grade_id": "check_integrity_sdpa",
                                 "points": 2, "score": 0}  # fmt: skip
    resources = {"nbgrader": {"notebook": "sdpa", "score": 0, "max_score": 2, "late_penalty": 0}}
    exporter = HTMLExporter(config=config, extra_template_paths=[str(bootstrap)])
    page, _ = exporter.from_notebook_node(new_notebook(cells=[cell]), resources=resources)
    assert "Out[" not in page and html.escape(note.text.splitlines()[0], quote=False) in page
    if shown == "text/plain alone":
        assert "Points given: 0 of 2" in page
    else:
        assert "Points given" not in page and "once scaled_dot_product_attention passes" in page
