"""A notebook's markdown made safe for nbgrader's feedback page: an allow-list of tags, attributes and links.

nbgrader's feedback template renders each markdown cell with ``markdown2html`` and nothing after it,
so a student's ``<script>``, ``<img onerror>`` or ``[link](javascript:...)`` ran in the page the student
and the instructor open (nbconvert's ``HTMLExporter.sanitize_html`` reaches only outputs there). The
course's feedback template (assignments/feedback_template) passes each rendered markdown cell through
``sanitised``, nbconvert's own sanitiser (bleach) with the tags markdown writes: anything else is shown
as text, event handlers and styles are dropped, and links and images keep only http, https, mailto and
relative addresses.
"""

from __future__ import annotations

import bleach

TAGS = frozenset(bleach.ALLOWED_TAGS) | {
    "p", "br", "hr", "div", "span", "pre", "code", "img", "sub", "sup", "del", "s", "h1", "h2", "h3", "h4", "h5",
    "h6", "table", "thead", "tbody", "tr", "th", "td",
}  # fmt: skip
ATTRIBUTES = {
    **bleach.ALLOWED_ATTRIBUTES,
    "a": ["href", "title"],
    "img": ["src", "alt", "title"],
    "th": ["align"],
    "td": ["align"],
    "*": ["class", "id"],
}
PROTOCOLS = frozenset({"http", "https", "mailto"})


def sanitised(html: str) -> str:
    """``html`` with only the allowed tags, attributes and link protocols; the rest escaped or dropped."""
    return bleach.clean(str(html), tags=TAGS, attributes=ATTRIBUTES, protocols=PROTOCOLS, strip=False)
