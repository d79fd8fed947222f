"""A student's markdown in nbgrader's feedback page (autograder/render/sanitise.py and the course's feedback
template): it cannot dress itself in the page's own classes, ids or styles to lay a forged score over the real
one, and nothing in it makes the page fetch a remote address when it is opened."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from autograder.render.sanitise import sanitised
from tests.helpers import ROOT, total

NOTEBOOK_TOTAL = total(notebook=True)  # a notebook's most: the checks' points and the knowledge check's
FULL = f"Score: {NOTEBOOK_TOTAL:.1f} / {NOTEBOOK_TOTAL:.1f}"  # the header a forged page claims

# Bootstrap 3's own classes (bootstrap.min.css is inlined in nbgrader's feedback page): fixed to the top of the
# window, over the real "sdpa (Score: 12.0 / <the notebook's total>)" header
FORGED_HEADER = (
    '<div class="navbar navbar-fixed-top panel-heading" id="toc" style="position: fixed; top: 0; z-index: 9999">'
    f'<h4 class="panel-title" id="top">sdpa ({FULL})</h4></div>'
)
REMOTE_IMAGES = [
    "https://evil.example/pixel.png",
    "http://evil.example/pixel.png",
    "HTTPS://evil.example/pixel.png",
    "//evil.example/pixel.png",  # protocol-relative: https on an https page, file: on a file page
    "/\\evil.example/pixel.png",  # browsers read "/\" as "//"
    "\\\\evil.example/pixel.png",
    " https://evil.example/pixel.png",
    "&#104;ttps://evil.example/pixel.png",
    "ftp://evil.example/pixel.png",
    "data:text/html;base64,PHNjcmlwdD4=",
]
LOCAL_IMAGES = ["pic.png", "figures/pic.png", "./pic.png", "data:image/png;base64,iVBORw0KGgo="]


class Tags(HTMLParser):
    """Every start tag of a page, with its attributes (entities decoded)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    handle_startendtag = handle_starttag


def tags(html: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = Tags()
    parser.feed(html)
    return parser.tags


def test_student_markup_keeps_no_class_id_or_style():
    """A forged "Score: <total> / <total>" header in the page's Bootstrap classes keeps its words and loses every class,
    id and style."""
    clean = sanitised(FORGED_HEADER)
    assert FULL in clean
    kept = [(tag, name) for tag, attrs in tags(clean) for name in attrs if name in ("class", "id", "style")]
    assert kept == []


@pytest.mark.parametrize("address", REMOTE_IMAGES)
def test_an_image_never_names_a_remote_address(address):
    """<img src> keeps no address with a scheme or a host (http, https, protocol-relative, backslashed, entity
    encoded) and no data: that is not an image: the page fetches nothing when it is opened."""
    clean = sanitised(f'<p><img alt="x" src="{address}"></p>')
    assert [attrs.get("src") for tag, attrs in tags(clean) if tag == "img"] == [None]


@pytest.mark.parametrize("address", LOCAL_IMAGES)
def test_an_image_keeps_a_relative_address_or_an_image_data_url(address):
    """Relative images (beside the notebook) and data:image/... (nbconvert's rendering of a cell's attachments)
    still show."""
    clean = sanitised(f'<img alt="x" src="{address}">')
    assert [attrs.get("src") for tag, attrs in tags(clean) if tag == "img"] == [address]


def test_links_keep_web_and_mail_addresses_and_say_nofollow():
    """<a href> keeps http, https, mailto and relative addresses (a click is the reader's choice), with
    rel="noopener noreferrer nofollow"; javascript: and data: are dropped."""
    clean = sanitised(
        '<a href="https://example.org/x">a</a><a href="mailto:me@example.org">b</a><a href="notes.html">c</a>'
        '<a href="javascript:alert(1)">d</a><a href="data:text/html,<script>alert(1)</script>">e</a>'
    )
    links = [attrs for tag, attrs in tags(clean) if tag == "a"]
    assert [link.get("href") for link in links] == [
        "https://example.org/x",
        "mailto:me@example.org",
        "notes.html",
        None,
        None,
    ]
    assert {link.get("rel") for link in links} == {"noopener noreferrer nofollow"}


def test_highlighted_code_keeps_only_pygments_token_classes():
    """A fenced code block as nbconvert's markdown renderer highlights it keeps its colours (div.highlight, one
    Pygments token class a span); any other class, on any tag, is dropped."""
    clean = sanitised(
        '<div class="highlight"><pre><span class="k">def</span> <span class="nf">f</span></pre></div>'
        '<span class="k navbar-fixed-top">x</span><div class="highlight panel-heading">y</div>'
        '<p class="k">z</p><span class="hidden">w</span>'
    )
    assert [attrs.get("class") for _, attrs in tags(clean)] == ["highlight", None, "k", "nf", None, None, None, None]


def _feedback_page(cells) -> str:
    """The feedback page nbgrader's generate_feedback writes, rendered with the course's config and template."""
    import nbgrader
    from nbconvert import HTMLExporter
    from traitlets.config import Config

    config = Config()
    path = ROOT / "assignments" / "nbgrader_config.py"
    namespace = {"get_config": lambda: config, "__file__": str(path)}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    # as nbgrader's GenerateFeedback adds it: where the page's inlined bootstrap.min.css is found
    config.HTMLExporter.extra_template_paths = [
        str(Path(nbgrader.__file__).parent / "server_extensions/formgrader/static/node_modules/bootstrap/dist/css")
    ]
    resources = {"nbgrader": {"notebook": "sdpa", "score": 12.0, "max_score": NOTEBOOK_TOTAL, "late_penalty": 0}}
    page, _ = HTMLExporter(config=config).from_notebook_node(new_notebook(cells=cells), resources=resources)
    return page


def test_the_feedback_page_shows_a_forged_header_as_plain_text_and_fetches_nothing():
    """Through the course's feedback template: the student's cell keeps its words, wears no class, id or style of
    its own and names no remote image, while nbgrader's own frame around it (its classes) and the code cells'
    highlighting stay as they were."""
    student = f'{FORGED_HEADER}\n\n![pixel](https://evil.example/pixel.png)\n\n<img src="//evil.example/p.png">\n'
    page = _feedback_page([new_markdown_cell(student), new_code_cell("def f(x):\n    return x\n")])
    assert f"sdpa (Score: 12.0 / {NOTEBOOK_TOTAL:.1f})" in page and FULL in page
    found = tags(page)
    assert [attrs for _, attrs in found if "navbar-fixed-top" in (attrs.get("class") or "")] == []
    assert [attrs for _, attrs in found if attrs.get("id") in ("toc", "top")] == [{"id": "toc"}]  # the page's own
    assert [attrs for _, attrs in found if "z-index" in (attrs.get("style") or "")] == []
    assert [attrs.get("src") for tag, attrs in found if tag == "img"] == [None, None]
    assert 'class="text_cell_render border-box-sizing rendered_html"' in page  # nbgrader's frame, unsanitised
    assert '<span class="k">def</span>' in page  # the code cell, highlighted as ever


def test_a_graded_answer_keeps_nbgraders_frame_and_loses_the_students_classes():
    """A graded markdown answer keeps nbgrader's panel, its score and the anchor its table-of-contents link
    points to; the student's own class inside it is dropped."""
    answer = new_markdown_cell('<b class="pull-right">Score: 2.0 / 2.0</b>')
    answer.metadata["nbgrader"] = {"solution": True, "grade": True, "grade_id": "q_why", "points": 2, "score": 0.5}
    page = _feedback_page([answer])
    assert '<a name="q_why"></a>' in page and "Score: 0.5 / 2.0" in page
    assert '<div class="panel panel-primary nbgrader_cell">' in page
    assert "<b>Score: 2.0 / 2.0</b>" in page
