"""A notebook's markdown made safe for nbgrader's feedback page: an allow-list of tags, attributes and addresses.

nbgrader's feedback template renders each markdown cell with ``markdown2html`` and nothing after it,
so a student's ``<script>``, ``<img onerror>`` or ``[link](javascript:...)`` ran in the page the student
and the instructor open (nbconvert's ``HTMLExporter.sanitize_html`` reaches only outputs there). The
course's feedback template (assignments/feedback_template) passes each rendered markdown cell, and only it
(not nbgrader's frame around it), through ``sanitised``: bleach with the tags markdown writes. Anything else
is shown as text, and

- no ``class``, ``id`` or ``style`` is kept: the page inlines Bootstrap, and a student's
  ``<div class="navbar-fixed-top">`` would lay a forged "Score: 65.0 / 65.0" over the real header. The one
  exception is highlighted code, as nbconvert's markdown renderer writes it: ``div.highlight`` and one
  Pygments token class a ``span`` (colours only; no page style uses those names outside ``.highlight``),
  and the heading's ``a.anchor-link`` (hidden until its heading is hovered). Tables lose markdown's
  column alignment (a ``style``);
- an image shows only from a relative address or a ``data:image/...`` URL (a cell's attachments): nothing
  the page fetches from elsewhere when it is opened (no http, https or protocol-relative ``//host``);
- a link keeps http, https, mailto and relative addresses, a click being the reader's choice, with
  ``rel="noopener noreferrer nofollow"``.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import bleach
from bleach.html5lib_shim import Filter, convert_entities
from pygments.token import STANDARD_TYPES

TAGS = frozenset(bleach.ALLOWED_TAGS) | {
    "p", "br", "hr", "div", "span", "pre", "code", "img", "sub", "sup", "del", "s", "h1", "h2", "h3", "h4", "h5",
    "h6", "table", "thead", "tbody", "tr", "th", "td",
}  # fmt: skip
PLAIN_ATTRIBUTES = {
    "a": ("title",),
    "abbr": ("title",),
    "acronym": ("title",),
    "img": ("alt", "title"),
    "th": ("align",),
    "td": ("align",),
}
LINK_SCHEMES = frozenset({"http", "https", "mailto"})
IMAGE_TYPES = frozenset({"png", "jpeg", "gif", "webp", "svg+xml"})  # an SVG in <img> runs and fetches nothing
TOKEN_CLASSES = frozenset(name for name in STANDARD_TYPES.values() if name)  # "k", "nf", "s1", ...
REL = "noopener noreferrer nofollow"


def sanitised(html: str) -> str:
    """``html`` with only the allowed tags, attributes and addresses; the rest escaped or dropped."""
    # bleach checks each address's scheme again after _keep: "data" passes there, and _keep lets it through
    # only as an image's data:image/...
    cleaner = bleach.Cleaner(
        tags=TAGS, attributes=_keep, protocols=LINK_SCHEMES | {"data"}, strip=False, filters=[_NoFollow]
    )
    return cleaner.clean(str(html))


def _keep(tag: str, name: str, value: str) -> bool:
    if name == "href":
        return tag == "a" and _is_link(value)
    if name == "src":
        return tag == "img" and _is_image(value)
    if name == "class":
        return _is_highlighting(tag, value)
    return name in PLAIN_ATTRIBUTES.get(tag, ())


def _normal(address: str) -> str:
    """The address as a browser reads it, in bleach's own way: entities decoded, whitespace, controls and
    non-ASCII dropped, lower case; and ``\\`` read as ``/``."""
    address = re.sub(r"[`\000-\040\177-\240\s]+", "", convert_entities(address))
    return re.sub(r"[^\x00-\x7f]", "", address).lower().replace("\\", "/")


def _is_relative(address: str) -> bool:
    """No scheme and no host: an address beside the page ("#x", "pic.png", "/a/b"), never "//host/..."."""
    try:
        parts = urlsplit(address)
    except ValueError:
        return False
    return not parts.scheme and not parts.netloc and not address.startswith("//") and ":" not in address


def _is_link(value: str) -> bool:
    address = _normal(value)
    scheme = address.split(":", 1)[0] if ":" in address else ""
    return scheme in LINK_SCHEMES or _is_relative(address)


def _is_image(value: str) -> bool:
    address = _normal(value)
    if address.startswith("data:image/"):
        return address[len("data:image/") :].split(";", 1)[0].split(",", 1)[0] in IMAGE_TYPES
    return _is_relative(address)


def _is_highlighting(tag: str, value: str) -> bool:
    """Only the classes nbconvert's markdown renderer writes for highlighted code and heading anchors."""
    return (
        (tag == "div" and value == "highlight")
        or (tag == "span" and value in TOKEN_CLASSES)
        or (tag == "a" and value == "anchor-link")
    )


class _NoFollow(Filter):
    """Every link, once sanitised, says rel="noopener noreferrer nofollow" (a student's own rel was dropped)."""

    def __iter__(self):
        for token in super().__iter__():
            if token["type"] in ("StartTag", "EmptyTag") and token["name"] == "a":
                token["data"][(None, "rel")] = REL
            yield token
