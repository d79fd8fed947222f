"""The LMS's side of ``sdpa-grade push`` (course/lti.py): the tool's key and its JWK, the access token (a
client-credentials grant with a JWT assertion signed RS256 by PyJWT, RFC 7523), and requests to the platform's
services, each with a time-out, bounded retries, no redirect followed, and HTTPS except on loopback."""

from __future__ import annotations

import base64
import hashlib
import json
import stat
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from pathlib import Path
from urllib.parse import urlencode, urlsplit, urlunsplit

from autograder.config import Lti, url_problem
from autograder.course.redact import redact
from autograder.render.inert import inert

AGS = "https://purl.imsglobal.org/spec/lti-ags/scope/"
SCOPES = (
    f"{AGS}lineitem",
    f"{AGS}result.readonly",
    f"{AGS}score",
    "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly",
)
LINEITEM = "application/vnd.ims.lis.v2.lineitem+json"
LINEITEMS = "application/vnd.ims.lis.v2.lineitemcontainer+json"
RESULTS = "application/vnd.ims.lis.v2.resultcontainer+json"
SCORE = "application/vnd.ims.lis.v1.score+json"
MEMBERS = "application/vnd.ims.lti-nrps.v2.membershipcontainer+json"
REQUIRED = ("issuer", "client_id", "deployment_id", "token_url", "memberships_url", "lineitems_url", "key_path")
ANSWER_CHARS = 300  # of the platform's answer, shown with a failure
URL_CHARS = 2000  # of an address, shown with a failure (the platform's own, a line item's or a next page's, quoted)
MAX_PAGES = 100  # of one paged listing (members, line items, results)
MAX_ANSWER = 1 << 22  # bytes of one answer read


class PushError(Exception):
    """What stops a push before any score is sent: the settings, the key, the token or the platform's listings."""


def missing_extra() -> str:
    """Why a push cannot run on this installation ("" when it can): the lms extra (PyJWT, cryptography) missing."""
    try:
        import cryptography  # noqa: F401
        import jwt  # noqa: F401
    except ImportError:
        return (
            "needs the lms extra (PyJWT, cryptography): pip install 'sdpa-assignment[lms]' (in the project's folder:"
            " pip install -e '.[lms]')"
        )
    return ""


def not_ready(lti: Lti) -> str:
    """Why a push cannot start with these settings ("" when it can): the [lti] keys left empty, or the key file."""
    empty = [key for key in REQUIRED if not getattr(lti, key)]
    if empty:
        return (
            f"[lti] is not set: {', '.join(empty)} empty; set them in the course's settings file (--config FILE,"
            " docs/lti.md)"
        )
    try:
        _private_key(Path(lti.key_path))
    except PushError as error:
        return str(error)
    return ""


def _private_key(path: Path):
    """The tool's RSA private key, read only where its file is its owner's alone."""
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    where = f"[lti] key_path {path}"
    try:
        mode = path.stat().st_mode
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise PushError(f"{where} can be read by others (mode {stat.S_IMODE(mode):o}): run chmod 600 {path}")
        key = load_pem_private_key(path.read_bytes(), password=None)
    except OSError as error:
        raise PushError(f"{where} cannot be read: {error.strerror}") from None
    except (ValueError, TypeError):
        raise PushError(f"{where} is not an unencrypted PEM private key (openssl genpkey -algorithm RSA)") from None
    if not isinstance(key, rsa.RSAPrivateKey):
        raise PushError(f"{where} is not an RSA key: LTI 1.3 signs with RS256")
    return key


def public_jwk(key_path: Path) -> dict:
    """The public JWK the LMS registers for the tool, its kid the key's RFC 7638 thumbprint (as the assertion's)."""
    from jwt.algorithms import RSAAlgorithm

    jwk = json.loads(RSAAlgorithm.to_jwk(_private_key(key_path).public_key()))
    canonical = json.dumps({k: jwk[k] for k in ("e", "kty", "n")}, separators=(",", ":"), sort_keys=True)
    kid = base64.urlsafe_b64encode(hashlib.sha256(canonical.encode()).digest()).rstrip(b"=").decode()
    return {"kty": "RSA", "e": jwk["e"], "n": jwk["n"], "kid": kid, "alg": "RS256", "use": "sig"}  # what Canvas asks


def sub_url(url: str, tail: str) -> str:
    """A line item's service URL: its path with ``/tail`` added, its query kept (Moodle's carry ?type_id=)."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/" + tail))


def with_query(url: str, **query: str) -> str:
    parts = urlsplit(url)
    joined = "&".join(filter(None, (parts.query, urlencode(query))))
    return urlunsplit(parts._replace(query=joined))


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is answered as the platform's refusal: followed, it would carry the token to an unchecked address."""

    def redirect_request(self, *args, **kwargs) -> None:  # noqa: ANN002, ANN003
        return None


OPENER = urllib.request.build_opener(_NoRedirect)


class Failed(Exception):
    """One request the platform refused or did not answer, with what it said. ``transient``: not answered, or answered
    429 or 5xx (the platform's trouble, counted towards failures_in_a_row); ``code``: its HTTP status (0: none)."""

    def __init__(self, message: str, transient: bool = False, code: int = 0) -> None:
        super().__init__(message)
        self.transient = transient
        self.code = code


class OutOfTime(Failed):
    """The push's budget is spent: no request is begun."""


class NotJson(Failed):
    """A 2xx answer whose body is not JSON: the request may well have done what it asked (read it back)."""


@dataclass
class Clock:
    """This machine's clock and how far the platform's reads ahead of it, from its answers' Date headers (whole
    seconds, so only a difference over a second counts): a score's timestamp must come after the time the platform
    stored the last one by its own clock (Canvas: 400, Moodle: 409 otherwise)."""

    ahead: float = 0.0  # the most seen

    def saw(self, date: str | None) -> None:
        """A Date header of the platform's, received now."""
        try:
            theirs = parsedate_to_datetime(date).timestamp() if date else None
        except (TypeError, ValueError, IndexError):
            theirs = None
        if theirs is not None:
            self.ahead = max(self.ahead, theirs - time.time())

    def lead(self) -> float:
        """Seconds a timestamp is put ahead of this machine's clock: the platform's lead and one second (its Date's
        rounding), where it leads by more than that rounding; else none."""
        return self.ahead + 1.0 if self.ahead > 1.0 else 0.0

    def stamp(self, after: float = 0.0) -> float:
        """A score's time, by the platform's clock where it is ahead, and at least a second after ``after`` (a retry's
        must be newer than the try the platform may have stored, to the second as Moodle compares)."""
        now = time.time() + self.lead()
        return max(now, after + 1.0) if after else now


def iso(stamp: float) -> str:
    return datetime.fromtimestamp(stamp, timezone.utc).isoformat()


def _read_within(answer, deadline: float, limit: float) -> bytes:  # noqa: ANN001 - an HTTPResponse
    """An answer's body, given up (TimeoutError) once ``deadline`` passes: a body trickled a piece at a time, each
    within the socket's time-out, is not waited for past the request's own. At most MAX_ANSWER bytes are read."""
    chunks, size = [], 0
    while size < MAX_ANSWER:
        if time.monotonic() > deadline:
            raise TimeoutError(f"no whole answer within timeout = {limit:g} s")
        chunk = answer.read1(1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)[:MAX_ANSWER]


def retry_after(headers: dict, clock: Clock) -> float | None:
    """The wait a 429 or 503 asks for (Retry-After: seconds, or an HTTP date by the platform's clock), or None."""
    value = str(headers.get("Retry-After") or headers.get("retry-after") or "").strip()
    if not value:
        return None
    if value.isdigit():
        return float(value)
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - (time.time() + clock.ahead))
    except (TypeError, ValueError, IndexError):
        return None


@dataclass
class Platform:
    """The platform's services, reached with the tool's access token (asked for again once where it is refused),
    within the push's budget (``lti.budget`` seconds from the platform's making)."""

    lti: Lti
    token: str = ""
    clock: Clock = field(default_factory=Clock)
    deadline: float = 0.0  # time.monotonic() at which the budget is spent

    def __post_init__(self) -> None:
        self.deadline = time.monotonic() + self.lti.budget

    def left(self) -> float:
        """Seconds of the push's budget left."""
        return self.deadline - time.monotonic()

    def _exchange(self, method: str, url: str, body: bytes | None, headers: dict) -> tuple:
        """(status, body, headers) of one request, its whole answer within ``timeout`` (and the budget left)."""
        limit = min(self.lti.timeout, self.left())
        request = urllib.request.Request(url, data=body, method=method, headers=headers)
        try:
            answer = OPENER.open(request, timeout=limit)  # the address is checked by _send
        except urllib.error.HTTPError as error:
            answer = error
        deadline = time.monotonic() + limit
        with answer:
            failed = isinstance(answer, urllib.error.HTTPError)
            stream = answer.fp if failed else answer
            said = _read_within(stream, deadline, limit) if stream is not None else b""
            got = dict(answer.headers)
            self.clock.saw(got.get("Date") or got.get("date"))
            return answer.code if failed else answer.status, said, got

    def _send(self, method: str, url: str, body, headers: dict, once: bool = False) -> tuple:  # noqa: ANN001
        """(status, body, headers) of one request, tried again ``retries`` times where it is not answered or is
        answered 429 or 5xx, after the Retry-After the platform asks (at most retry_after_max) or 1, 2, 4 s; never
        begun or waited for past the budget (``once``: not tried again). ``body``: bytes, or a function that makes
        each try's (a score's newer timestamp)."""
        problem = url_problem(url)
        if problem:
            raise Failed(f"{quoted(url, URL_CHARS)}: {problem}")
        last = 0 if once else self.lti.retries
        budget = f"the push's budget ([lti] budget = {self.lti.budget:g} s) was spent"
        for attempt in range(last + 1):
            if self.left() <= 0:
                raise OutOfTime(f"{method} {quoted(url, URL_CHARS)}: {budget}", transient=True)
            try:
                code, said, got = self._exchange(method, url, body() if callable(body) else body, headers)
            except (urllib.error.URLError, OSError) as error:
                code, said, got = 0, quoted(getattr(error, "reason", error)), {}
            if code and code != 429 and code < 500:
                return code, said, got
            wait = (retry_after(got, self.clock) if code in (429, 503) else None) or float(2**attempt)
            why = ""
            if wait > self.lti.retry_after_max:
                why = f"; it asks to wait {wait:g} s, more than [lti] retry_after_max = {self.lti.retry_after_max:g}"
            elif wait >= self.left():
                why = f"; {budget} before the next try"
            if attempt == last or why:
                tries = f" (tried {attempt + 1} times)" if attempt else ""
                if code:
                    raise Failed(
                        f"{method} {quoted(url, URL_CHARS)}: {_answer(code, said)}{tries}{why}",
                        transient=True,
                        code=code,
                    )
                got_no = said if said.startswith("no whole answer") else f"no answer: {said}"
                raise Failed(f"{method} {quoted(url, URL_CHARS)} got {got_no}{tries}{why}", transient=True)
            time.sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises on its last attempt

    def _get_token(self) -> str:
        import jwt

        lti, now = self.lti, int(time.time())
        jwk = public_jwk(Path(lti.key_path))
        claims = {"iss": lti.client_id, "sub": lti.client_id, "aud": lti.token_url, "iat": now, "exp": now + 300,
                  "jti": uuid.uuid4().hex}  # fmt: skip
        assertion = jwt.encode(claims, _private_key(Path(lti.key_path)), algorithm="RS256", headers={"kid": jwk["kid"]})
        form = urlencode({
            "grant_type": "client_credentials",
            "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
            "client_assertion": assertion,
            "scope": " ".join(SCOPES),
        }).encode()  # fmt: skip
        headers = {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}
        code, said, _ = self._send("POST", lti.token_url, form, headers)
        if code != 200:
            raise Failed(
                f"the platform refused the tool's token request ({_answer(code, said)}): is the public JWK of"
                f" key_path registered for client_id {inert(lti.client_id, keep_newlines=False)}?"
            )
        try:
            return str(json.loads(said)["access_token"])
        except (ValueError, KeyError, TypeError):
            raise Failed(f"the token answer holds no access_token ({_answer(code, said)})") from None

    def call(self, method: str, url: str, accept: str, payload=None, kind: str = "", once: bool = False  # noqa: ANN001
             ) -> tuple:  # fmt: skip
        """(status, decoded JSON or None, headers) of a request that the platform answered with a 2xx; Failed else
        (NotJson for a 2xx whose body is not JSON). ``payload``: a dict, or a function that makes each try's.
        ``once``: a request that must not be repeated where its answer was lost (a line item's creation)."""
        body = None if payload is None else lambda: json.dumps(payload() if callable(payload) else payload).encode()
        for renewed in (False, True):
            if not self.token or renewed:
                self.token = self._get_token()
            headers = {"Authorization": f"Bearer {self.token}", "Accept": accept}
            if body is not None:
                headers["Content-Type"] = kind or accept
            code, said, got = self._send(method, url, body, headers, once)
            if code != 401:
                break
        if code == 401:
            raise Failed(f"the platform refused the access token, even one just issued ({_answer(code, said)}): check"
                         " this machine's clock, and that the tool has the AGS and NRPS scopes")  # fmt: skip
        if not 200 <= code < 300:
            raise Failed(f"{method} {quoted(url, URL_CHARS)}: {_answer(code, said)}", code=code)
        try:
            return code, json.loads(said) if said.strip() else None, got
        except ValueError:
            raise NotJson(
                f"{method} {quoted(url, URL_CHARS)}: the answer is not JSON ({_answer(code, said)})", code=code
            ) from None

    def pages(self, url: str, accept: str, key: str | None) -> list:
        """Every entry of a paged listing: the body's list (``key`` in it, or the body itself), its Link rel="next"."""
        found: list = []
        for _ in range(MAX_PAGES):
            _, body, headers = self.call("GET", url, accept)
            entries = body.get(key) if key and isinstance(body, dict) else body
            if not isinstance(entries, list):
                raise Failed(f"GET {quoted(url, URL_CHARS)}: expected a list{f' under {key!r}' if key else ''}")
            found += entries
            url = _next_link(headers.get("Link") or headers.get("link") or "")
            if not url:
                return found
        raise Failed(f"GET {quoted(url, URL_CHARS)}: more than {MAX_PAGES} pages")


def _next_link(header: str) -> str:
    for part in header.split(","):
        if 'rel="next"' in part.replace(" ", ""):
            return part.split(";")[0].strip().strip("<>")
    return ""


def quoted(text: object, limit: int = ANSWER_CHARS) -> str:
    """A text from the platform as a message quotes it: its secrets redacted (redact.py, the one pass every such
    text takes), on one line, at most ``limit`` characters."""
    return inert(redact(str(text)).strip()[:limit], keep_newlines=False)


def _answer(code: int, said: bytes) -> str:
    text = quoted(said.decode("utf-8", "replace"))
    return f"HTTP {code}: {text}" if text else f"HTTP {code}"
