"""Student text reaches people inert. Markup in a notebook does not run in nbgrader's
feedback page, and a student's name with terminal escapes or a right-to-left override is shown, never
obeyed, on every line the batch prints."""

from __future__ import annotations

from html.parser import HTMLParser

import nbformat
import pytest
from nbformat.v4 import new_markdown_cell

from tests.helpers import BIN, ROOT, nbgrader, run

MARK = "sdpa-markup-pwned"
MARKUP = (
    f"# My notes\n\n<script>window['{MARK}'] = 1</script>\n\n"
    f'<img src="x" onerror="window[\'{MARK}\'] = 2">\n\n'
    f"<a href=\"javascript:window['{MARK}'] = 3\">notes</a>\n"
)


class Live(HTMLParser):
    """What in a page would run: scripts' text, and every attribute value that is an event handler or a
    javascript: link."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.code: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        self._in_script = tag == "script"
        for name, value in attrs:
            if name.startswith("on") or (value or "").strip().lower().startswith("javascript:"):
                self.code.append(f"<{tag} {name}={value}>")

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.code.append(data)


def live_code(page: str) -> list[str]:
    parser = Live()
    parser.feed(page)
    return [code for code in parser.code if MARK in code]


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_markup_in_a_notebook_does_not_run_in_the_nbgrader_feedback_page(nbgrader_course):
    """<script>, <img onerror> and a javascript: link in a student's markdown cell, through the real
    nbgrader autograde and generate_feedback with the course's config: the page shows none of them live,
    and still shows the student's own words."""
    course, env = nbgrader_course
    notebook = nbformat.read(course / "release" / "sdpa" / "sdpa.ipynb", as_version=4)
    notebook.cells.insert(1, new_markdown_cell(MARKUP))  # stubs everywhere else: a fast grading
    submitted = course / "submitted" / "eve" / "sdpa"
    submitted.mkdir(parents=True)
    nbformat.write(notebook, submitted / "sdpa.ipynb")
    nbgrader("autograde", "sdpa", "--force", cwd=course, env=env)
    nbgrader("generate_feedback", "sdpa", "--force", cwd=course, env=env)
    page = (course / "feedback" / "eve" / "sdpa" / "sdpa.html").read_text()
    assert "My notes" in page  # the cell is there
    assert live_code(page) == []


def test_the_course_config_sanitises_feedback_pages():
    """assignments/nbgrader_config.py turns on nbconvert's own sanitiser for every page nbgrader renders."""
    from traitlets.config import Config

    config = Config()
    namespace = {"get_config": lambda: config, "__file__": str(ROOT / "assignments" / "nbgrader_config.py")}
    exec(compile((ROOT / "assignments" / "nbgrader_config.py").read_text(), "nbgrader_config.py", "exec"), namespace)
    assert config.HTMLExporter.get("sanitize_html") is True


HOSTILE_NAMES = {
    "title": "eve\x1b]0;owned\x07",  # sets the terminal's title
    "erase": "mal\x1b[2K\x1b[1Gbob: full marks",  # erases its line and writes another student's grade
    "bidi": "tom\u202eskram lluf :",  # a right-to-left override: the line reads backwards from here
}


@pytest.mark.timeout(120)
def test_a_batchs_terminal_lines_show_hostile_names_inert(tmp_path):
    """Student folders named with ANSI escapes and U+202E: every line the batch prints (progress, notes,
    --show, summary), on stdout and stderr alike, shows each as its escape and holds no control or bidi
    character."""
    folder = tmp_path / "class"
    for name in HOSTILE_NAMES.values():
        (folder / name).mkdir(parents=True)  # no submission: ungradable, graded in a moment
    (folder / HOSTILE_NAMES["erase"] / "attention.py").write_text("raise SystemExit(0)\n")  # fails to load, fast
    result = run(
        [str(BIN / "sdpa-grade"), "batch", str(folder), "--jobs", "2", "--show", HOSTILE_NAMES["title"]],
        timeout=280,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    printed = result.stdout + result.stderr
    obeyed = sorted({c for c in printed if not c.isprintable() and c != "\n"})
    assert obeyed == [], f"characters a terminal obeys: {[hex(ord(c)) for c in obeyed]}"
    progress = [line for line in result.stderr.splitlines() if line.startswith("[")]
    assert len(progress) == len(HOSTILE_NAMES)
    for shown in ("eve\\x1b]0;owned\\x07", "mal\\x1b[2K\\x1b[1Gbob: full marks", "tom\\u202eskram lluf :"):
        assert any(f"  {shown}: 0/" in line for line in progress), (shown, progress)
