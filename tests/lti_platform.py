"""An LTI 1.3 platform on 127.0.0.1 for tests/lms/test_lti.py: PyPI's lti1p3platform, served by the standard library.

lti1p3platform's own: the registration (the tool's public JWK, the platform's keys), the token endpoint's checks
(``get_access_token``: the client-credentials grant, the tool's RS256 assertion verified with jwcrypto and PyJWT
against the registered JWK, the scopes), the access token it signs and each service call's validation
(``validate_token``), and the Assignment and Grade Services and Names and Role Provisioning Services handlers
(``AssignmentsGradesService``, ``NamesRoleProvisioningService``: the bearer check, the methods, paging, the media
types). Ours: the HTTP server (http.server in a thread), the routes, the gradebook the handlers store in (line
items, one score per learner and line item, results read from them), and the answer to a token the library refuses
(HTTP 401 with its reason, as the library's framework adapters give for its own refusals).

Also ours: Canvas's and Moodle's own rules, read from their source (``flavour``), and the faults a real platform
shows (``Faults``), each bounded in count and time. Canvas (app/controllers/lti/ims/scores_controller.rb, the NRPS
member serializer): members carry user_id, lti11_legacy_user_id, name, given_name, family_name, email and
lis_person_sourcedid (the SIS id), never a login; a score for a user who is not a student is refused (422); a score
whose timestamp is not after the result's updated_at (the platform's clock) is refused (400). Moodle
(mod/lti/service/memberships users_to_json, gradebookservices scores.php): members carry user_id, roles, status,
lis_person_sourcedid (the ID number, "" where none), the names and email by privacy, never a username; the line
items' addresses need ``?type_id=`` (403 without); a score whose timestamp is not after the grade's timemodified, to
the second, is refused (409); a score is answered 200 with an empty body. Both page their membership by 10 with a
``Link: rel="next"`` header.
"""

from __future__ import annotations

import json
import math
import threading
import time
import typing as t
from dataclasses import dataclass, field
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwcrypto.jwk import JWK
from lti1p3platform.exceptions import LineItemNotFoundException, LtiException, LtiServiceException
from lti1p3platform.ltiplatform import LTI1P3PlatformConfAbstract
from lti1p3platform.membership import Context
from lti1p3platform.registration import Registration
from lti1p3platform.request import Request
from lti1p3platform.score import UpdateScoreStatus
from lti1p3platform.service_connector import AssignmentsGradesService, NamesRoleProvisioningService

ISSUER = "https://lms.example.edu"
CLIENT_ID = "10000000000042"
DEPLOYMENT_ID = "7:course-1"
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
FLAVOURS = ("generic", "canvas", "moodle")
PAGE = 10  # Canvas's and Moodle's membership page, as the independent platform served it


def member(number: int, login: str, role: str = LEARNER, flavour: str = "generic") -> dict:
    """A member of the course as each platform's membership gives it: ``generic`` with every identity field (login_id
    among them), ``canvas`` and ``moodle`` with what theirs carry (no login; the e-mail and the SIS id or ID number)."""
    common = {"user_id": f"u{number}", "roles": [role], "status": "Active", "email": f"{login}@example.edu",
              "lis_person_sourcedid": f"sis-{login}"}  # fmt: skip
    if flavour == "canvas":
        avatar = "https://canvas.example.edu/images/messages/avatar-50.png"
        return {**common, "lti11_legacy_user_id": f"legacy{number}", "name": login.title(), "given_name": login.title(),
                "family_name": "Student", "picture": avatar}  # fmt: skip
    if flavour == "moodle":
        return {**common, "name": f"{login.title()} Student", "given_name": login.title(), "family_name": "Student"}
    return {**common, "login_id": login}


def rsa_pem() -> tuple[bytes, str]:
    """A new RSA key: (private PEM, public PEM)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    return private, public.decode()


class _Registration(Registration):
    """The library's registration, its access tokens living ``lifetime`` seconds (negative: issued expired), the
    next ones ``lifetimes`` first; ``issued`` counts them."""

    lifetime = 3600

    def __init__(self) -> None:
        super().__init__()
        self.lifetimes: list[int] = []
        self.issued = 0

    def encode_and_sign(self, payload, private_key, headers=None, expiration=None):  # noqa: ANN001, ANN201
        if not expiration:
            return Registration.encode_and_sign(payload, private_key, headers)
        self.issued += 1
        lifetime = self.lifetimes.pop(0) if self.lifetimes else self.lifetime
        return Registration.encode_and_sign(payload, private_key, headers, lifetime)


class _Conf(LTI1P3PlatformConfAbstract):
    def init_platform_config(self, registration: Registration) -> None:  # noqa: D102
        self.registration = registration

    def get_registration_by_params(self, **kwargs: t.Any) -> Registration:  # noqa: D102
        return self.registration


class _Request(Request):
    def build_metadata(self, request: dict) -> dict:  # noqa: D102
        return request


@dataclass
class Gradebook:
    """What the platform holds: its line items by id, and each line item's scores by LTI user id."""

    items: dict[str, dict] = field(default_factory=dict)
    scores: dict[str, dict[str, dict]] = field(default_factory=dict)
    stored_at: dict[str, dict[str, float]] = field(default_factory=dict)  # by the platform's clock, as it keeps it
    applied: list[str] = field(default_factory=list)  # the user id of each score applied, in order
    lock: threading.Lock = field(default_factory=threading.Lock)


def _ags(platform: LtiPlatform) -> type[AssignmentsGradesService]:
    book = platform.book

    class Ags(AssignmentsGradesService):
        def find_lineitems(self, page=1, limit=None, line_item_id=None, resource_link_id=None, resource_id=None,
                           tag=None):  # fmt: skip  # noqa: ANN001, ANN201, D102
            with book.lock:
                items = [i for i in book.items.values() if resource_id is None or i.get("resourceId") == resource_id]
            return {"content": items, "has_next": False}

        def find_lineitem(self, line_item_id):  # noqa: ANN001, ANN201, D102
            if line_item_id not in book.items:
                raise LineItemNotFoundException()
            return book.items[line_item_id]

        def create_lineitem(self, creation_data):  # noqa: ANN001, ANN201, D102
            with book.lock:
                number = len(book.items) + 1
                made = {**creation_data, "id": f"{platform.url}/lineitems/{number}/lineitem?type_id=1"}
                book.items[made["id"]] = made
                book.scores[made["id"]] = {}
                book.stored_at[made["id"]] = {}
            return made

        def update_lineitem(self, update_data):  # noqa: ANN001, ANN201, D102
            raise LtiServiceException("not supported here", 405)

        def delete_lineitem(self, line_item_id):  # noqa: ANN001, ANN201, D102
            raise LtiServiceException("not supported here", 405)

        def update_score(self, line_item_id, score):  # noqa: ANN001, ANN201, D102
            if line_item_id not in book.items:
                raise LineItemNotFoundException()
            user = score.get("userId")
            if platform.flavour == "canvas" and user not in platform.learner_ids():
                raise LtiServiceException("User not found in course or is not a student", 422)
            if user not in platform.learner_ids() - platform.refused:  # as Canvas: learners only
                return UpdateScoreStatus.NOTAPPLIED
            stamp = datetime.fromisoformat(str(score.get("timestamp"))).timestamp()
            with book.lock:
                before = book.stored_at[line_item_id].get(user)
                if before is not None and platform.flavour == "canvas" and stamp <= before:
                    last = datetime.fromtimestamp(before).isoformat()
                    raise LtiServiceException(f"Provided timestamp of {score['timestamp']} not after last updated"
                                              f" timestamp of {last}", 400)  # fmt: skip
                if before is not None and platform.flavour == "moodle" and int(before) >= int(stamp):
                    number = line_item_id.split("/lineitems/")[1].split("/")[0]
                    raise LtiServiceException(f"Refusing score with an earlier timestamp for item {number} and user"
                                              f" {user}", 409)  # fmt: skip
                book.scores[line_item_id][user] = score
                book.stored_at[line_item_id][user] = platform.now()
                book.applied.append(user)
            return UpdateScoreStatus.SUCCESS

        def get_results(self, line_item_id, page=1, limit=None, user_id=None):  # noqa: ANN001, ANN201, D102
            if line_item_id not in book.items:
                raise LineItemNotFoundException()
            with book.lock:
                scores = [s for u, s in book.scores[line_item_id].items() if user_id in (None, u)]
            results = [{"id": f"{line_item_id}#{s['userId']}", "userId": s["userId"], "resultScore": s["scoreGiven"],
                        "resultMaximum": s["scoreMaximum"], "scoreOf": line_item_id} for s in scores]  # fmt: skip
            return {"content": results, "has_next": False}

    return Ags


def _nrps(platform: LtiPlatform) -> type[NamesRoleProvisioningService]:
    class Nrps(NamesRoleProvisioningService):
        def get_member_data_page(self, page=1, limit=None, role=None, since=None):  # noqa: ANN001, ANN201, D102
            members = [dict(m) for m in platform.members]
            if platform.flavour == "generic":
                return {"content": members, "has_next": False}
            first = (int(page) - 1) * PAGE
            return {"content": members[first : first + PAGE], "has_next": first + PAGE < len(members)}

        def get_context_by_id(self) -> Context:  # noqa: D102
            return Context(id="course-1", label="SDPA", title="Attention")

    return Nrps


class LtiPlatform:
    """The platform, started on a free port of 127.0.0.1 (``with LtiPlatform(tool_public_pem, members) as lms``).

    ``members``: NRPS members (user_id, roles, login_id, email, lis_person_sourcedid). ``gradebook()`` reads back
    each line item's scores by the learner's login; ``registration.lifetime`` sets the access tokens' lifetime."""

    def __init__(self, tool_public_pem: str, members: list[dict], flavour: str = "generic") -> None:
        if flavour not in FLAVOURS:
            raise ValueError(f"flavour {flavour!r}: expected one of {', '.join(FLAVOURS)}")
        self.flavour = flavour
        self.members = members
        self.refused: set[str] = set()  # user ids whose scores the platform does not apply (HTTP 403)
        self.lose_created = False  # True: a line item is created, and its answer lost (HTTP 500)
        self.faults = Faults()
        self.book = Gradebook()
        private, public = rsa_pem()
        jwk = JWK.from_pem(tool_public_pem.encode())
        tool = {**json.loads(jwk.export_public()), "kid": jwk.thumbprint(), "alg": "RS256", "use": "sig"}
        self.registration = (
            _Registration()
            .set_iss(ISSUER)
            .set_client_id(CLIENT_ID)
            .set_deployment_id(DEPLOYMENT_ID)
            .set_platform_private_key(private.decode())
            .set_platform_public_key(public)
            .set_tool_key_set({"keys": [tool]})
        )
        self.conf = _Conf(registration=self.registration)
        self.conf.get_registration()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> LtiPlatform:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)

    def now(self) -> float:
        """The platform's clock: this machine's, ``faults.clock_ahead`` seconds ahead."""
        return time.time() + self.faults.clock_ahead

    def learner_ids(self) -> set[str]:
        return {m["user_id"] for m in self.members if LEARNER in m["roles"]}

    def gradebook(self) -> dict[str, dict[str, float]]:
        """Line item label -> learner's login -> the score the platform holds."""
        login = {m["user_id"]: m.get("login_id") or m["email"].split("@")[0] for m in self.members}
        with self.book.lock:
            return {
                item["label"]: {login[user]: s["scoreGiven"] for user, s in self.book.scores[ident].items()}
                for ident, item in self.book.items.items()
            }

    def settings(self, key_path: str, **changes: object) -> str:
        """A course's [lti] table for this platform (``changes`` replacing its keys; Moodle's line items URL with its
        ``?type_id=``; on the generic platform, whose members carry a login, identity = "login")."""
        lineitems = f"{self.url}/lineitems" + ("?type_id=1" if self.flavour == "moodle" else "")
        keys = {"issuer": ISSUER, "client_id": CLIENT_ID, "deployment_id": DEPLOYMENT_ID,
                "token_url": f"{self.url}/token", "memberships_url": f"{self.url}/memberships",
                "lineitems_url": lineitems, "key_path": key_path, "retries": 0, "timeout": 5.0,
                **({"identity": "login"} if self.flavour == "generic" else {}), **changes}  # fmt: skip
        return "[lti]\n" + "".join(f"{key} = {json.dumps(value)}\n" for key, value in keys.items())

    def answer(self, method: str, path: str, query: dict, headers: dict, body: bytes) -> tuple[int, object, dict]:
        """One request: (status, JSON body, headers), as lti1p3platform's framework adapters shape a Response."""
        content_type = headers.get("Content-Type", "")
        named_type = "type_id" in query  # Moodle's line items need it; the handlers take the query without it
        query = {k: v for k, v in query.items() if k != "type_id"}
        request = _Request({
            "method": method, "form_data": dict(parse_qsl(body.decode())) if "form" in content_type else {},
            "json": json.loads(body) if body and "json" in content_type else None, "get_data": query,
            "headers": headers, "content_type": content_type, "path": path,
        })  # fmt: skip
        faults = self.faults
        if path == "/token":
            if faults.token_answer is not None:
                return 200, faults.token_answer, {}
            try:
                return 200, self.conf.get_access_token(request.form_data), {}
            except Exception as error:  # noqa: BLE001 - the library's refusals: missing claims, a bad signature, ...
                return 401, {"error": "invalid_client", "error_description": f"{type(error).__name__}: {error}"}, {}
        if path == "/moved":  # a redirect off this machine, which the tool must not follow with its token
            return 302, {"error": "moved"}, {"Location": "http://lms.example.edu/memberships"}
        limited = faults.rate_limited()
        if limited:
            return 429, {"error": "rate limit exceeded"}, {"Retry-After": str(limited)}
        if self.flavour == "moodle" and path.startswith("/lineitems") and not named_type:
            return 403, b"", {}  # Moodle's answer to a tool that names no type_id: no tool proxy, refused
        if path == "/memberships":
            service = _nrps(self)(request, self.conf, f"{self.url}/memberships")
            call = service.handle_get_members
        else:
            parts = path.strip("/").split("/")
            service = _ags(self)(request, self.conf, f"{self.url}/lineitems")
            item = f"{self.url}/lineitems/{parts[1]}/lineitem?type_id=1" if len(parts) >= 3 else ""
            if parts == ["lineitems"]:
                call = service.handle_get_lineitems if method == "GET" else service.handle_create_lineitem
            elif len(parts) == 4 and parts[3] == "scores":
                if faults.echo_headers:  # a refusal that quotes the request, its bearer token included
                    return 403, {"error": "forbidden", "request_headers": headers}, {}
                if faults.score_delay:  # the score is applied, and answered too late
                    time.sleep(min(faults.score_delay, 30.0))
                call = lambda: service.handle_update_score(item)  # noqa: E731
            elif len(parts) == 4 and parts[3] == "results":
                call = lambda: service.handle_get_results(item)  # noqa: E731
            else:
                return 404, {"error": "Not found"}, {}
        try:
            resp = service.handle_resp(call)
        except (LtiException, jwt.PyJWTError) as error:  # validate_token's refusals: an expired or foreign token
            return 401, {"error": f"{type(error).__name__}: {error}"}, {}
        if not 200 <= resp.code < 300:
            return resp.code, {"error": resp.message}, {}
        if self.lose_created and call == getattr(service, "handle_create_lineitem", None):
            return 500, {"error": "internal error"}, {}
        if path.endswith("/scores"):
            user = str((request.json or {}).get("userId"))
            if user in faults.store_then_502:  # applied, and the answer lost on the way
                faults.store_then_502.discard(user)
                return 502, b"<html><body>502 Bad Gateway</body></html>", {"Content-Type": "text/html"}
            if faults.plain_ok:
                return 200, b"OK", {"Content-Type": "text/plain"}
            if self.flavour == "moodle":
                return 200, b"", {"Content-Type": resp.media_type}
        result = resp.result
        data = result["content"] if isinstance(result, dict) and "content" in result else result
        link = result.get("next") if isinstance(result, dict) else None
        if path == "/memberships" and isinstance(result, dict) and self.flavour != "generic":
            page = int(query.get("page", 1))
            if len(self.members) > page * PAGE:
                link = f"{self.url}/memberships?page={page + 1}"
        headers = {"Content-Type": resp.media_type, **({"Link": f'<{link}>; rel="next"'} if link else {})}
        return resp.code, data, headers


def _handler(platform: LtiPlatform) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            parts = urlsplit(self.path)
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            query = dict(parse_qsl(parts.query))
            code, data, headers = platform.answer(self.command, parts.path, query, dict(self.headers), body)
            text = data if isinstance(data, bytes) else json.dumps(data).encode()
            self.send_response(code)
            for name, value in {"Content-Type": "application/json", **headers}.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(text)))
            self.end_headers()
            trickle = platform.faults.trickle if parts.path == "/memberships" else 0.0
            try:
                if not trickle:
                    self.wfile.write(text)
                    return
                pieces = 30  # the answer in 30 pieces, spread over ``trickle`` seconds (each well within a time-out)
                size = max(1, math.ceil(len(text) / pieces))
                for start in range(0, len(text), size):
                    self.wfile.write(text[start : start + size])
                    self.wfile.flush()
                    time.sleep(trickle / pieces)
            except (BrokenPipeError, ConnectionResetError):  # the tool stopped waiting
                pass

        def date_time_string(self, timestamp: float | None = None) -> str:  # the Date header, by the platform's clock
            return super().date_time_string(platform.now() if timestamp is None else timestamp)

        do_GET = do_POST = _serve  # noqa: N815

        def log_message(self, *args: object) -> None:  # quiet: the test reads the gradebook, not the log
            pass

    return Handler


@dataclass
class Faults:
    """What a real platform does under load or with its own ideas, each off by default."""

    clock_ahead: float = 0.0  # seconds the platform's clock is ahead of this machine's (its Date, its stored times)
    retry_after: int = 0  # > 0: service requests answered 429 with Retry-After for this many seconds from the first
    store_then_502: set[str] = field(default_factory=set)  # user ids whose next score is applied, then answered 502
    plain_ok: bool = False  # a score applied is answered 200 "OK" as text/plain
    score_delay: float = 0.0  # a score is applied after this many seconds, then answered
    trickle: float = 0.0  # the membership's answer is sent in pieces over this many seconds
    token_answer: dict | None = None  # answered by the token URL in place of an access token
    echo_headers: bool = False  # a score is refused (403) with the request's headers quoted back
    limited_until: float = 0.0
    answered_429: int = 0  # how many requests were answered 429

    def rate_limited(self) -> int:
        """The Retry-After to answer now (0: not limited): ``retry_after`` seconds from the first request."""
        if not self.retry_after:
            return 0
        now = time.monotonic()
        if not self.limited_until:
            self.limited_until = now + self.retry_after
        if now >= self.limited_until:
            return 0
        self.answered_429 += 1
        return math.ceil(self.limited_until - now)
