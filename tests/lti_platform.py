"""An LTI 1.3 platform on 127.0.0.1 for tests/test_lti.py: PyPI's lti1p3platform, served by the standard library.

lti1p3platform's own: the registration (the tool's public JWK, the platform's keys), the token endpoint's checks
(``get_access_token``: the client-credentials grant, the tool's RS256 assertion verified with jwcrypto and PyJWT
against the registered JWK, the scopes), the access token it signs and each service call's validation
(``validate_token``), and the Assignment and Grade Services and Names and Role Provisioning Services handlers
(``AssignmentsGradesService``, ``NamesRoleProvisioningService``: the bearer check, the methods, paging, the media
types). Ours: the HTTP server (http.server in a thread), the routes, the gradebook the handlers store in (line
items, one score per learner and line item, results read from them), and the answer to a token the library refuses
(HTTP 401 with its reason, as the library's framework adapters give for its own refusals).
"""

from __future__ import annotations

import json
import threading
import typing as t
from dataclasses import dataclass, field
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
            return made

        def update_lineitem(self, update_data):  # noqa: ANN001, ANN201, D102
            raise LtiServiceException("not supported here", 405)

        def delete_lineitem(self, line_item_id):  # noqa: ANN001, ANN201, D102
            raise LtiServiceException("not supported here", 405)

        def update_score(self, line_item_id, score):  # noqa: ANN001, ANN201, D102
            if line_item_id not in book.items:
                raise LineItemNotFoundException()
            if score.get("userId") not in platform.learner_ids() - platform.refused:  # as Canvas: learners only
                return UpdateScoreStatus.NOTAPPLIED
            with book.lock:
                book.scores[line_item_id][score["userId"]] = score
            return UpdateScoreStatus.SUCCESS

        def get_results(self, line_item_id, page=1, limit=None, user_id=None):  # noqa: ANN001, ANN201, D102
            if line_item_id not in book.items:
                raise LineItemNotFoundException()
            with book.lock:
                scores = list(book.scores[line_item_id].values())
            results = [{"id": f"{line_item_id}#{s['userId']}", "userId": s["userId"], "resultScore": s["scoreGiven"],
                        "resultMaximum": s["scoreMaximum"], "scoreOf": line_item_id} for s in scores]  # fmt: skip
            return {"content": results, "has_next": False}

    return Ags


def _nrps(platform: LtiPlatform) -> type[NamesRoleProvisioningService]:
    class Nrps(NamesRoleProvisioningService):
        def get_member_data_page(self, page=1, limit=None, role=None, since=None):  # noqa: ANN001, ANN201, D102
            return {"content": [dict(m) for m in platform.members], "has_next": False}

        def get_context_by_id(self) -> Context:  # noqa: D102
            return Context(id="course-1", label="SDPA", title="Attention")

    return Nrps


class LtiPlatform:
    """The platform, started on a free port of 127.0.0.1 (``with LtiPlatform(tool_public_pem, members) as lms``).

    ``members``: NRPS members (user_id, roles, login_id, email, lis_person_sourcedid). ``gradebook()`` reads back
    each line item's scores by the learner's login; ``registration.lifetime`` sets the access tokens' lifetime."""

    def __init__(self, tool_public_pem: str, members: list[dict]) -> None:
        self.members = members
        self.refused: set[str] = set()  # user ids whose scores the platform does not apply (HTTP 403)
        self.lose_created = False  # True: a line item is created, and its answer lost (HTTP 500)
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

    def learner_ids(self) -> set[str]:
        return {m["user_id"] for m in self.members if LEARNER in m["roles"]}

    def gradebook(self) -> dict[str, dict[str, float]]:
        """Line item label -> learner's login -> the score the platform holds."""
        login = {m["user_id"]: m["login_id"] for m in self.members}
        with self.book.lock:
            return {
                item["label"]: {login[user]: s["scoreGiven"] for user, s in self.book.scores[ident].items()}
                for ident, item in self.book.items.items()
            }

    def settings(self, key_path: str, **changes: object) -> str:
        """A course's [lti] table for this platform (``changes`` replacing its keys)."""
        keys = {"issuer": ISSUER, "client_id": CLIENT_ID, "deployment_id": DEPLOYMENT_ID,
                "token_url": f"{self.url}/token", "memberships_url": f"{self.url}/memberships",
                "lineitems_url": f"{self.url}/lineitems", "key_path": key_path, "retries": 0, "timeout": 5.0,
                **changes}  # fmt: skip
        return "[lti]\n" + "".join(f"{key} = {json.dumps(value)}\n" for key, value in keys.items())

    def answer(self, method: str, path: str, query: dict, headers: dict, body: bytes) -> tuple[int, object, dict]:
        """One request: (status, JSON body, headers), as lti1p3platform's framework adapters shape a Response."""
        content_type = headers.get("Content-Type", "")
        request = _Request({
            "method": method, "form_data": dict(parse_qsl(body.decode())) if "form" in content_type else {},
            "json": json.loads(body) if body and "json" in content_type else None, "get_data": query,
            "headers": headers, "content_type": content_type, "path": path,
        })  # fmt: skip
        if path == "/token":
            try:
                return 200, self.conf.get_access_token(request.form_data), {}
            except Exception as error:  # noqa: BLE001 - the library's refusals: missing claims, a bad signature, ...
                return 401, {"error": "invalid_client", "error_description": f"{type(error).__name__}: {error}"}, {}
        if path == "/moved":  # a redirect off this machine, which the tool must not follow with its token
            return 302, {"error": "moved"}, {"Location": "http://lms.example.edu/memberships"}
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
        result = resp.result
        data = result["content"] if isinstance(result, dict) and "content" in result else result
        return resp.code, data, {"Content-Type": resp.media_type}


def _handler(platform: LtiPlatform) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            parts = urlsplit(self.path)
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            query = {k: v for k, v in parse_qsl(parts.query) if k != "type_id"}
            code, data, headers = platform.answer(self.command, parts.path, query, dict(self.headers), body)
            text = json.dumps(data).encode()
            self.send_response(code)
            for name, value in {"Content-Type": "application/json", **headers}.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(text)))
            self.end_headers()
            self.wfile.write(text)

        do_GET = do_POST = _serve  # noqa: N815

        def log_message(self, *args: object) -> None:  # quiet: the test reads the gradebook, not the log
            pass

    return Handler
