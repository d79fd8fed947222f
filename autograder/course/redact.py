"""What a platform says, with its secrets taken out: the one pass every text quoted from an LMS goes through before a
person reads it (``sdpa-grade push``'s messages, course/lti_client.py).

A platform's answer can carry what must never reach a terminal or a log: a token answer shaped in its own way
(``{"accessToken": "..."}``), a refusal that echoes the request it refused (its ``Authorization: Bearer ...``
header), the tool's signed ``client_assertion``. Three passes, each a pattern with no nested or overlapping
repetition (linear in the text, STYLE.md 19): a field whose name says it is secret keeps its name and loses its value
(JSON, a header line or a form: ``"access_token": "..."``, ``Authorization: ...``, ``client_assertion=...``); a
``Bearer`` or ``Basic`` credential anywhere; anything that looks like a JWT (``eyJ...``, a JSON header base64url'd).
"""

from __future__ import annotations

import re

REDACTED = "[redacted]"
# a field whose name holds one of these words, without case (access_token, accessToken, client_assertion, ...): its
# name (quoted or bare, the word with at most 32 name characters either side), ':' or '=', and its value up to the end
# of its quote, line, pair or object
SECRET_WORDS = "token|assertion|secret|password|authorization|cookie|api_?key"
_NAME = rf"[A-Za-z0-9_.-]{{0,32}}(?:{SECRET_WORDS})[A-Za-z0-9_.-]{{0,32}}"
_FIELD = re.compile(
    rf"""(["']?)({_NAME})\1([ \t]{{0,8}}[:=][ \t]{{0,8}})(["']?)([^"'\r\n,;&}}]{{1,4096}})""", re.IGNORECASE
)
_CREDENTIAL = re.compile(r"\b(Bearer|Basic)[ \t]{1,8}[^\s\"',;&})\]>]{1,4096}", re.IGNORECASE)
_JWT = re.compile(r"eyJ[A-Za-z0-9_-]{1,8192}(?:\.[A-Za-z0-9_-]{0,8192}){0,2}")


def redact(text: str) -> str:
    """``text`` with every secret value replaced by ``[redacted]``: secret-named fields, credentials, JWTs."""
    text = _FIELD.sub(_field, str(text))
    text = _CREDENTIAL.sub(lambda found: f"{found.group(1)} {REDACTED}", text)
    return _JWT.sub(REDACTED, text)


def _field(found: re.Match) -> str:
    quote, name, between, opening, _ = found.groups()
    return f"{quote}{name}{quote}{between}{opening}{REDACTED}"
