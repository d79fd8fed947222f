"""sdpa-grade push against a real LTI 1.3 platform (lti1p3platform, tests/lti_platform.py) on 127.0.0.1."""

from __future__ import annotations

import csv
import io
import json
import os
import socket
from datetime import datetime
from pathlib import Path

import pytest

from tests.helpers import BIN, run, total
from tests.lti_platform import INSTRUCTOR, LEARNER, LtiPlatform, member, rsa_pem

TOTAL = total()
SCORES = {"alice": 40.0, "bob": 30.0, "carol": 20.0}
DUE = "2026-12-01T23:59:00-05:00"
LABEL = "Scaled dot-product attention"  # the defaults' line_item_label


def _member(number: int, login: str, role: str = LEARNER) -> dict:
    return {"user_id": f"u{number}", "roles": [role], "login_id": login, "email": f"{login}@example.edu",
            "lis_person_sourcedid": f"sis-{login}", "status": "Active"}  # fmt: skip


# the class's three students, a learner with no result in the class, and the instructor
MEMBERS = [*(_member(i, name) for i, name in enumerate(SCORES)), _member(8, "erin"), _member(9, "prof", INSTRUCTOR)]


@pytest.fixture
def tool_key(tmp_path: Path) -> tuple[Path, str]:
    """The tool's private key file (mode 600) and its public PEM."""
    private, public = rsa_pem()
    path = tmp_path / "tool.pem"
    path.write_bytes(private)
    path.chmod(0o600)
    return path, public


@pytest.fixture
def course(graded_class, tmp_path: Path):
    """The graded class (alice, bob, carol: SCORES of TOTAL) and its results folder."""
    folder, out = graded_class({"score": 0.0, "max_score": TOTAL, "output": "", "tests": []}, names=tuple(SCORES))
    for name, score in SCORES.items():
        (out / f"{name}.json").write_text(json.dumps({"score": score, "max_score": TOTAL, "output": "", "tests": []}))
    return folder, out


@pytest.fixture
def a_class(tmp_path: Path):
    """``a_class({name: score})``: a graded class of any names (e-mails, SIS ids), results written where a batch
    writes them (roster.result_names): (class folder, results folder)."""
    from autograder.course.roster import result_names

    def make(scores: dict[str, float]) -> tuple[Path, Path]:
        folder, out = tmp_path / "class", tmp_path / "class-grades"
        out.mkdir()
        for name, file in result_names(list(scores)).items():
            (folder / name).mkdir(parents=True)
            (out / file).write_text(json.dumps({"score": scores[name], "max_score": TOTAL, "output": "", "tests": []}))
        return folder, out

    return make


def _roll(flavour: str, size: int) -> list[dict]:
    """A course on ``flavour`` as its membership gives it: ``size`` learners s00, s01, ... and an instructor."""
    learners = [member(i, f"s{i:02d}", flavour=flavour) for i in range(size)]
    return [*learners, member(10_000, "prof", INSTRUCTOR, flavour)]


def _push(folder: Path, out: Path, config: Path, *extra: str):
    return run([str(BIN / "sdpa-grade"), "push", str(folder), "--json-dir", str(out), "--config", str(config), *extra],
               timeout=60)  # fmt: skip


def _csv_scores(folder: Path, out: Path, tmp_path: Path, *extra: str) -> dict[str, float]:
    """The final scores `sdpa-grade summary --csv` writes, by student."""
    grades = tmp_path / "grades.csv"
    done = run([str(BIN / "sdpa-grade"), "summary", str(folder), "--json-dir", str(out), "--csv", str(grades), *extra],
               timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return {row["student"]: float(row["score"]) for row in csv.DictReader(io.StringIO(grades.read_text()))}


def _settings(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "course.toml"
    path.write_text(text)
    return path


@pytest.mark.timeout(120)
def test_a_push_sends_out_of_the_one_maximum_of_record_and_refuses_a_class_with_two(course, tool_key, tmp_path):
    """The line item a push creates is out of the maximum the class's results hold (no one scores it here), as each
    score is; a class whose results hold two maxima (an attention.py graded out of the checks alone by an older
    grader, beside notebooks) is refused before anything is sent, naming each maximum and its students."""
    folder, out = course
    key, public = tool_key
    with LtiPlatform(public, MEMBERS) as lms:
        done = _push(folder, out, _settings(tmp_path, lms.settings(str(key))))
        assert done.returncode == 0, done.stderr
        [item] = lms.book.items.values()
        assert item["scoreMaximum"] == TOTAL > max(SCORES.values())
        assert {s["scoreMaximum"] for s in lms.book.scores[item["id"]].values()} == {TOTAL}
    other = {"score": SCORES["carol"], "max_score": TOTAL + 10, "output": "", "tests": []}
    (out / "carol.json").write_text(json.dumps(other))
    with LtiPlatform(public, MEMBERS) as lms:
        refused = _push(folder, out, _settings(tmp_path, lms.settings(str(key))))
        assert refused.returncode == 2, refused.stdout + refused.stderr
        said = f"graded out of 2 maxima ({TOTAL:g}: alice, bob; {TOTAL + 10:g}: carol)"
        assert said in refused.stderr and "nothing sent" in refused.stderr, refused.stderr
        assert lms.gradebook() == {}


@pytest.mark.timeout(120)
def test_a_push_holds_the_csvs_scores_and_a_regrade_updates_them_in_one_line_item(course, tool_key, tmp_path):
    """Dry run: nothing sent, each student's new score shown and the learner with no result listed; the push: the
    platform holds the CSV's final scores; regraded with a late penalty and pushed again: the CSV's new scores, in the
    same line item; no key or token printed."""
    folder, out = course
    key, public = tool_key
    with LtiPlatform(public, MEMBERS) as lms:
        config = _settings(tmp_path, lms.settings(str(key)))
        dry = _push(folder, out, config, "--dry-run")
        assert dry.returncode == 0, dry.stderr
        assert lms.gradebook() == {}, "a dry run sends nothing (no line item either)"
        assert f"alice: on the platform none, new 40 of {TOTAL:g}" in dry.stdout
        assert "learners with no result in this class (login): erin" in dry.stdout
        assert "dry run: 3 of 3 students' scores would be sent; nothing sent" in dry.stderr

        done = _push(folder, out, config)
        assert done.returncode == 0, done.stderr
        assert lms.gradebook() == {LABEL: _csv_scores(folder, out, tmp_path)} == {LABEL: SCORES}
        assert "sdpa-grade push: 3 of 3 students' scores sent" in done.stderr
        for said in (dry.stdout + dry.stderr, done.stdout + done.stderr):
            assert "BEGIN" not in said and "eyJ" not in said, "no key and no token printed"

        # a push under a late policy decides nothing: the record (decided by the batch, here without one) stands
        late = lms.settings(str(key)) + f'[deadline]\ndue = "{DUE}"\npolicy = "per_day"\npercent = 10\n'
        config = _settings(tmp_path, late)
        same = _push(folder, out, config, "--dry-run")
        assert f"bob: on the platform 30, new 30 of {TOTAL:g}" in same.stdout, same.stdout
        # a regrade of the record: bob handed in 2 hours late, decided by the batch under a 10% a day policy
        from autograder.assignment.deadline import apply, parse
        from autograder.report import stamp

        policy = parse({"due": DUE, "policy": "per_day", "percent": 10}, "course.toml")
        decided = apply(policy, "bob", 30.0, datetime.fromisoformat("2026-12-02T01:59:00-05:00"))
        bob = out / "bob.json"
        bob.write_text(json.dumps(stamp(json.loads(bob.read_text()), decided)))
        dry = _push(folder, out, config, "--dry-run")
        assert f"bob: on the platform 30, new 27 of {TOTAL:g}" in dry.stdout, dry.stdout
        again = _push(folder, out, config)
        assert again.returncode == 0, again.stderr
        regraded = _csv_scores(folder, out, tmp_path)
        assert regraded == {"alice": 40.0, "bob": 27.0, "carol": 20.0}
        assert lms.gradebook() == {LABEL: regraded}, "one line item, updated"


@pytest.mark.timeout(60)
def test_a_student_the_platform_does_not_know_is_named_and_not_sent(course, tool_key, tmp_path):
    """A student of the class with no learner on the platform, and one who is the course's instructor there: named
    with why, the others sent, the summary counts them, exit 1."""
    folder, out = course
    for name in ("dave", "prof"):
        (folder / name).mkdir()
        (out / f"{name}.json").write_text(json.dumps({"score": 10.0, "max_score": TOTAL, "output": "", "tests": []}))
    key, public = tool_key
    with LtiPlatform(public, MEMBERS) as lms:
        done = _push(folder, out, _settings(tmp_path, lms.settings(str(key))))
        assert done.returncode == 1, done.stderr
        assert "not sent: dave: no learner on the platform has login dave" in done.stderr
        assert "not sent: prof: no learner on the platform has login prof" in done.stderr
        assert "sdpa-grade push: 3 of 5 students' scores sent" in done.stderr
        assert lms.gradebook() == {LABEL: SCORES}


@pytest.mark.timeout(60)
def test_a_score_the_platform_refuses_is_named_with_its_answer(course, tool_key, tmp_path):
    """A learner whose score the platform does not apply: named with the platform's answer, the others sent, exit 1."""
    folder, out = course
    key, public = tool_key
    with LtiPlatform(public, MEMBERS) as lms:
        lms.refused = {"u1"}  # bob
        done = _push(folder, out, _settings(tmp_path, lms.settings(str(key))))
        assert done.returncode == 1, done.stderr
        assert "/lineitems/1/lineitem/scores?type_id=1: HTTP 403" in done.stderr and "notapplied" in done.stderr
        assert "not sent: bob: POST " in done.stderr and "2 of 3 students' scores sent" in done.stderr
        assert lms.gradebook() == {LABEL: {"alice": 40.0, "carol": 20.0}}


@pytest.mark.timeout(60)
def test_a_line_item_created_whose_answer_is_lost_is_not_created_twice(course, tool_key, tmp_path):
    """A platform that creates the line item and then answers 500: the creation is not tried again (nothing sent,
    exit 1), and the next push finds that line item and fills it: still one column."""
    folder, out = course
    key, public = tool_key
    with LtiPlatform(public, MEMBERS) as lms:
        config = _settings(tmp_path, lms.settings(str(key), retries=2))
        lms.lose_created = True
        done = _push(folder, out, config)
        assert done.returncode == 1, done.stderr
        assert f"POST {lms.url}/lineitems: HTTP 500" in done.stderr and "nothing sent" in done.stderr
        lms.lose_created = False
        done = _push(folder, out, config)
        assert done.returncode == 0, done.stderr
        assert lms.gradebook() == {LABEL: SCORES} and len(lms.book.items) == 1


def test_lti_settings_are_validated_and_decide_no_grade(tmp_path):
    """[lti]: an identity not among login, email, sis_id and a number for a text are refused, naming the file; its
    keys are not in the settings' digest (changing them regrades nothing)."""
    from autograder.config import ConfigError, load_settings
    from autograder.provenance import settings_sha256

    for text, says in (('identity = "name"', "expected one of login, email, sis_id"),
                       ("issuer = 5", "expected a text in quotes")):  # fmt: skip
        with pytest.raises(ConfigError, match=f"Invalid lti.* from {tmp_path}.*: {says}"):
            load_settings(_settings(tmp_path, f"[lti]\n{text}\n"))
    chosen = load_settings(_settings(tmp_path, '[lti]\nclient_id = "42"\nidentity = "email"\n'))
    assert chosen.lti.identity == "email"
    assert settings_sha256(chosen) == settings_sha256(load_settings(environ={}))


@pytest.mark.timeout(60)
def test_a_key_others_can_read_or_the_platform_does_not_know_is_refused(course, tool_key, tmp_path):
    """A group-readable key: refused before anything is sent (exit 2, with the chmod to run); a key the platform has
    not registered: its token request refused, the platform's reason shown, nothing sent (exit 1)."""
    folder, out = course
    key, public = tool_key
    with LtiPlatform(public, MEMBERS) as lms:
        key.chmod(0o640)
        done = _push(folder, out, _settings(tmp_path, lms.settings(str(key))))
        assert done.returncode == 2, done.stderr
        assert f"[lti] key_path {key} can be read by others (mode 640): run chmod 600 {key}" in done.stderr
        other = tmp_path / "other.pem"
        other.write_bytes(rsa_pem()[0])
        other.chmod(0o600)
        done = _push(folder, out, _settings(tmp_path, lms.settings(str(other))))
        assert done.returncode == 1, done.stderr
        assert "the platform refused the tool's token request (HTTP 401" in done.stderr
        assert "nothing sent (0 of 3 students' scores)" in done.stderr
        assert lms.gradebook() == {}


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("where", ["token_url", "lineitems_url", "plain_http", "redirect"])
def test_a_wrong_url_says_which_and_sends_nothing(course, tool_key, tmp_path, where):
    """A token URL nothing answers, a line items URL the platform does not have, http:// off this machine, and a
    redirect (not followed: it would carry the token): each named, nothing sent."""
    folder, out = course
    key, public = tool_key
    with LtiPlatform(public, MEMBERS) as lms:
        changes = {
            "token_url": {"token_url": f"http://127.0.0.1:{_closed_port()}/token"},
            "lineitems_url": {"lineitems_url": f"{lms.url}/lineitemz"},
            "plain_http": {"lineitems_url": "http://lms.example.edu/lineitems"},
            "redirect": {"memberships_url": f"{lms.url}/moved"},
        }[where]
        done = _push(folder, out, _settings(tmp_path, lms.settings(str(key), **changes)))
        said = {
            "token_url": f"POST {changes.get('token_url')} got no answer",
            "lineitems_url": f"GET {lms.url}/lineitemz?resource_id=sdpa: HTTP 404",
            "plain_http": "expected https:// (http is taken only on this machine",
            "redirect": f"GET {lms.url}/moved: HTTP 302",
        }[where]
        assert said in done.stderr, done.stderr
        assert done.returncode == (2 if where == "plain_http" else 1)
        assert lms.gradebook() == {}


@pytest.mark.timeout(60)
def test_an_expired_token_is_renewed_once_then_refused_with_the_reason(course, tool_key, tmp_path):
    """An access token that has expired is asked for again once: the push goes on with the new one; a platform whose
    tokens are all expired when issued: the service's refusal, with its reason and what to check; nothing sent."""
    folder, out = course
    key, public = tool_key
    with LtiPlatform(public, MEMBERS) as lms:
        config = _settings(tmp_path, lms.settings(str(key)))
        lms.registration.lifetimes = [-60]  # the first token only
        done = _push(folder, out, config)
        assert done.returncode == 0, done.stderr
        assert lms.registration.issued == 2 and lms.gradebook() == {LABEL: SCORES}
    with LtiPlatform(public, MEMBERS) as lms:
        lms.registration.lifetime = -60
        done = _push(folder, out, _settings(tmp_path, lms.settings(str(key))))
        assert done.returncode == 1, done.stderr
        assert "the platform refused the access token, even one just issued (HTTP 401" in done.stderr
        assert "expired" in done.stderr and "check this machine's clock" in done.stderr
        assert "nothing sent (0 of 3 students' scores)" in done.stderr
        assert lms.registration.issued == 2 and lms.gradebook() == {}


@pytest.mark.timeout(60)
def test_a_push_with_lti_unset_is_refused(course, tmp_path):
    """The default settings ([lti] empty): refused, naming the keys to set, before the class is read (exit 2)."""
    folder, out = course
    done = run([str(BIN / "sdpa-grade"), "push", str(folder), "--json-dir", str(out)], timeout=60,
               env={**os.environ, "SDPA_GRADE_CONFIG": ""})  # fmt: skip
    assert done.returncode == 2
    assert "sdpa-grade push: [lti] is not set: issuer, client_id" in done.stderr and "nothing sent" in done.stderr


def test_the_public_jwk_is_the_keys_public_half_named_by_its_thumbprint(tool_key):
    """public_jwk, which the LMS registers: the public fields only (never the private exponent), its kid the RFC 7638
    thumbprint jwcrypto computes (the kid the tool's assertion names)."""
    from jwcrypto.jwk import JWK

    from autograder.course.lti_client import public_jwk

    key, _ = tool_key
    jwk = public_jwk(key)
    assert set(jwk) == {"kty", "e", "n", "kid", "alg", "use"}
    assert jwk["kid"] == JWK.from_pem(key.read_bytes()).thumbprint()
    assert JWK(**{k: jwk[k] for k in ("kty", "e", "n")}).thumbprint() == jwk["kid"]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("fault", ["token_answer", "echoed_headers"])
def test_a_platforms_secrets_are_never_printed(course, tool_key, tmp_path, fault):
    """A token answer with no access_token but an accessToken, and a 403 that echoes the request's headers (its bearer
    token): the platform's answer is quoted with the secret redacted, never the token or the assertion."""
    folder, out = course
    key, public = tool_key
    with LtiPlatform(public, MEMBERS) as lms:
        if fault == "token_answer":
            lms.faults.token_answer = {"accessToken": "SECRET-8d41c0", "token_type": "bearer"}
        else:
            lms.faults.echo_headers = True
        done = _push(folder, out, _settings(tmp_path, lms.settings(str(key))))
        said = done.stdout + done.stderr
        assert done.returncode == 1, said
        if fault == "token_answer":
            assert 'the token answer holds no access_token (HTTP 200: {"accessToken": "[redacted]"' in said
        else:
            assert '"Authorization": "[redacted]"' in said and "not sent: alice: POST " in said
        assert "SECRET" not in said and "eyJ" not in said and "Bearer ey" not in said, said


@pytest.mark.timeout(60)
def test_redact_takes_out_tokens_assertions_and_credentials():
    """redact: secret-named fields (JSON, header, form), Bearer and Basic credentials, JWTs; other text kept; texts
    built to make a backtracking pattern blow up (160,000 characters each) end within the test's time-out."""
    from autograder.course.redact import redact

    cases = {
        '{"accessToken": "SECRET-1", "expires_in": 3600}': '{"accessToken": "[redacted]", "expires_in": 3600}',
        "Authorization: Bearer 0a1b2c3d4e5f\nHost: lms": "Authorization: [redacted]\nHost: lms",
        "grant_type=client_credentials&client_assertion=abc.def.ghi&scope=x":
            "grant_type=client_credentials&client_assertion=[redacted]&scope=x",
        "GET https://lms/y?access_token=abc&b=1": "GET https://lms/y?access_token=[redacted]&b=1",
        "denied (bearer 9f8e7d)": "denied (bearer [redacted])",
        "bad signature on eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln": "bad signature on [redacted]",
        "HTTP 403: User not found in course, scoreGiven: 40": "HTTP 403: User not found in course, scoreGiven: 40",
    }  # fmt: skip
    for text, expected in cases.items():
        assert redact(text) == expected, text
    from autograder.course.lti_client import quoted

    item = "https://lms/lineitems/1/lineitem?type_id=1&access_token=abc\x1b[2J"  # a line item id the platform gave
    assert quoted(item) == "https://lms/lineitems/1/lineitem?type_id=1&access_token=[redacted]"
    for hostile in ("token" * 4000, "a" * 20000, '"' * 20000, "eyJ" + "a." * 10000, "Bearer " * 3000):
        redact(hostile * 8)  # ends within the test's time-out (a blow-up: the time-out fails the test)


@pytest.mark.timeout(90)
@pytest.mark.parametrize("flavour", ["canvas", "moodle"])
@pytest.mark.parametrize("identity", ["default", "sis_id"])
def test_docs_identities_match_on_canvas_and_moodle(a_class, tool_key, tmp_path, flavour, identity):
    """docs/lti.md's examples as written: the default identity (e-mail) and sis_id match every learner of a Canvas
    and of a Moodle membership (no login in either; 12 learners over two pages of 10; Moodle's ?type_id=): each
    score sent once, in one column, exit 0."""
    scores = {f"s{i:02d}": 10.0 + i for i in range(12)}
    named = {(f"{n}@example.edu" if identity == "default" else f"sis-{n}"): score for n, score in scores.items()}
    folder, out = a_class(named)
    key, public = tool_key
    with LtiPlatform(public, _roll(flavour, 12), flavour) as lms:
        changes = {} if identity == "default" else {"identity": identity}
        done = _push(folder, out, _settings(tmp_path, lms.settings(str(key), **changes)))
        assert done.returncode == 0, done.stderr
        assert "sdpa-grade push: 12 of 12 students' scores sent" in done.stderr
        assert lms.gradebook() == {LABEL: scores} and sorted(lms.book.applied) == sorted(f"u{i}" for i in range(12))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("dry_run", [False, True])
def test_an_identity_field_the_platform_does_not_send_is_refused_before_any_column(
    a_class, tool_key, tmp_path, dry_run
):
    """identity = "login" on Canvas, whose membership carries no login: refused before any column is created, naming
    the fields it does send and the identities they allow (exit 2), for the push and its dry run alike."""
    folder, out = a_class({f"s{i:02d}": 10.0 for i in range(3)})
    key, public = tool_key
    with LtiPlatform(public, _roll("canvas", 3), "canvas") as lms:
        config = _settings(tmp_path, lms.settings(str(key), identity="login"))
        done = _push(folder, out, config, *(["--dry-run"] if dry_run else []))
        assert done.returncode == 2, done.stderr
        assert (
            "sdpa-grade push: identity = login: the platform's learners carry no login_id, ext_user_username or"
            " username; they carry email, family_name, given_name, lis_person_sourcedid, lti11_legacy_user_id, name,"
            " picture, roles, status, user_id: set [lti] identity to email or sis_id"
        ) in done.stderr
        assert "nothing sent" in done.stderr and lms.book.items == {}, "no column created"


@pytest.mark.timeout(60)
def test_a_class_that_matches_no_learner_is_refused_before_any_column(a_class, tool_key, tmp_path):
    """identity = "email" (the default) on a class whose folders are named by login: no student matches a learner, so
    nothing is sent and no column is created (exit 2), saying what the class's names are compared with."""
    folder, out = a_class({f"s{i:02d}": 10.0 for i in range(3)})
    key, public = tool_key
    with LtiPlatform(public, _roll("canvas", 3), "canvas") as lms:
        done = _push(folder, out, _settings(tmp_path, lms.settings(str(key))))
        assert done.returncode == 2, done.stderr
        assert (
            "sdpa-grade push: none of the class's 3 students is a learner of the platform by email (the class's names"
            " are its folders' names)"
        ) in done.stderr
        assert lms.book.items == {}, "no column created"


def _class_of(a_class, size: int) -> tuple[Path, Path, dict[str, float]]:
    """A class of ``size`` students named by their e-mail (the default identity) on a ``_roll`` course: (class folder,
    results folder, score by login)."""
    scores = {f"s{i:02d}": float(i % 50) for i in range(size)}
    folder, out = a_class({f"{name}@example.edu": score for name, score in scores.items()})
    return folder, out, scores


@pytest.mark.timeout(60)
def test_retry_after_is_honoured(a_class, tool_key, tmp_path):
    """A platform answering 429 with Retry-After: 4 for its first 4 s: the push waits what it asks (not 1 s and 2 s),
    so its one retry is answered, then sends every score (exit 0): counted by the platform's 429 answers."""
    folder, out, scores = _class_of(a_class, 3)
    key, public = tool_key
    with LtiPlatform(public, _roll("canvas", 3), "canvas") as lms:
        lms.faults.retry_after = 4
        done = _push(folder, out, _settings(tmp_path, lms.settings(str(key), retries=2)))
        assert done.returncode == 0, done.stderr
        assert lms.gradebook() == {LABEL: scores} and lms.faults.answered_429 == 1


@pytest.mark.timeout(60)
def test_a_retry_carries_a_newer_timestamp_on_moodle(a_class, tool_key, tmp_path):
    """Moodle stores a score and answers 502: the retry carries a timestamp newer to the second, which Moodle takes
    (not 409); the score is reported sent, and stored once more, not twice refused."""
    folder, out, scores = _class_of(a_class, 3)
    key, public = tool_key
    with LtiPlatform(public, _roll("moodle", 3), "moodle") as lms:
        lms.faults.store_then_502 = {"u1"}
        done = _push(folder, out, _settings(tmp_path, lms.settings(str(key), retries=2)))
        assert done.returncode == 0, done.stderr
        assert "sdpa-grade push: 3 of 3 students' scores sent" in done.stderr
        assert lms.gradebook() == {LABEL: scores} and lms.book.applied.count("u1") == 2


@pytest.mark.timeout(60)
def test_a_stored_score_answered_with_text_is_read_back(a_class, tool_key, tmp_path):
    """A platform that stores each score and answers "200 OK" as plain text: each score is read back from the line
    item's results, found, and reported sent (exit 0)."""
    folder, out, scores = _class_of(a_class, 4)
    key, public = tool_key
    with LtiPlatform(public, _roll("canvas", 4), "canvas") as lms:
        lms.faults.plain_ok = True
        done = _push(folder, out, _settings(tmp_path, lms.settings(str(key))))
        assert done.returncode == 0, done.stderr
        assert "sdpa-grade push: 4 of 4 students' scores sent" in done.stderr
        assert "answered HTTP 200 with no JSON; read back: stored" in done.stdout
        assert lms.gradebook() == {LABEL: scores}


@pytest.mark.timeout(90)
@pytest.mark.parametrize("flavour", ["canvas", "moodle"])
def test_a_platform_clock_ahead_still_takes_an_update(a_class, tool_key, tmp_path, flavour):
    """A platform whose clock is 3 minutes ahead (its Date header, the times it stores): a regrade pushed right after
    the first push is stamped after what the platform holds (Canvas: not 400; Moodle: not 409), and the push says by
    how much the clocks differ."""
    folder, out, scores = _class_of(a_class, 3)
    key, public = tool_key
    with LtiPlatform(public, _roll(flavour, 3), flavour) as lms:
        lms.faults.clock_ahead = 180
        config = _settings(tmp_path, lms.settings(str(key)))
        assert _push(folder, out, config).returncode == 0
        from autograder.course.roster import result_names

        file = out / result_names(["s01@example.edu"])["s01@example.edu"]
        file.write_text(json.dumps({"score": 33.0, "max_score": TOTAL, "output": "", "tests": []}))
        done = _push(folder, out, config)
        assert done.returncode == 0, done.stderr
        assert "the platform's clock reads 180 s ahead of this machine's" in done.stdout
        assert lms.gradebook() == {LABEL: {**scores, "s01": 33.0}}


@pytest.mark.timeout(60)
def test_a_trickled_membership_is_given_up_at_its_timeout(a_class, tool_key, tmp_path):
    """A membership answer trickled over 15 s, each piece well within timeout = 2: given up at its timeout (a push
    that waited for the whole answer would have read it and sent the scores), nothing sent, the reason named."""
    folder, out, _ = _class_of(a_class, 3)
    key, public = tool_key
    with LtiPlatform(public, _roll("canvas", 3), "canvas") as lms:
        lms.faults.trickle = 15.0
        done = _push(folder, out, _settings(tmp_path, lms.settings(str(key), timeout=2.0)))
        assert done.returncode == 1, done.stderr
        assert f"GET {lms.url}/memberships got no whole answer within timeout = 2 s" in done.stderr
        assert "nothing sent" in done.stderr and lms.gradebook() == {}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("stop", ["budget", "failures_in_a_row"])
def test_a_push_to_a_platform_that_times_out_ends_in_its_budget_and_a_rerun_completes_it(
    a_class, tool_key, tmp_path, stop
):
    """200 students, every score timing out: the push ends when its budget is spent (or after failures_in_a_row),
    having tried fewer scores than the class has, lists each student not sent and exits 1; the platform answering
    again, a rerun sends each of those once and none of the scores the platform already holds."""
    import time

    folder, out, scores = _class_of(a_class, 200)
    key, public = tool_key
    with LtiPlatform(public, _roll("canvas", 200), "canvas") as lms:
        budget = 6.0
        limits = {"budget": budget, "failures_in_a_row": 1000} if stop == "budget" else {"failures_in_a_row": 3}
        config = _settings(tmp_path, lms.settings(str(key), timeout=0.3, **limits))
        lms.faults.score_delay = 1.0
        done = _push(folder, out, config)
        assert done.returncode == 1, done.stderr
        not_sent = [line for line in done.stderr.splitlines() if line.startswith("not sent: ")]
        if stop == "budget":
            assert "the push's budget ([lti] budget = 6 s) was spent: push again to send it" in done.stderr
        else:
            assert "the push stopped after 3 scores in a row got no answer: push again to send it" in done.stderr
            assert len(not_sent) == 200
        assert len(not_sent) > 150 and "students' scores sent" in done.stderr
        time.sleep(1.5)  # the scores the platform applied after the push stopped waiting
        before = list(lms.book.applied)
        assert len(before) < 200, "the push tried every score: its stop was not kept"
        lms.faults.score_delay = 0.0
        again = _push(folder, out, config)
        assert again.returncode == 0, again.stderr
        rerun = lms.book.applied[len(before) :]
        assert sorted(rerun + before) == sorted(f"u{i}" for i in range(200)), "each learner's score applied once"
        assert lms.gradebook() == {LABEL: scores}


@pytest.mark.timeout(60)
def test_push_without_the_lms_extra_is_one_line_and_exit_2(course, tool_key, tmp_path):
    """PyJWT and cryptography not installed (shadowed by packages that fail to import): one line naming the extra and
    its install command, exit 2, no traceback; the offline dry run needs neither and still runs."""
    folder, out = course
    key, _ = tool_key
    shadow = tmp_path / "shadow"
    for package in ("jwt", "cryptography"):
        (shadow / package).mkdir(parents=True)
        (shadow / package / "__init__.py").write_text(f"raise ModuleNotFoundError({f'No module named {package}'!r})\n")
    env = {**os.environ, "PYTHONPATH": str(shadow)}
    lti = (f'[lti]\nissuer = "https://lms.example.edu"\nclient_id = "1"\ndeployment_id = "1"\nkey_path = "{key}"\n'
           'token_url = "http://127.0.0.1:9/token"\nmemberships_url = "http://127.0.0.1:9/m"\n'
           'lineitems_url = "http://127.0.0.1:9/l"\nidentity = "login"\n')  # fmt: skip
    config = _settings(tmp_path, lti)
    command = [str(BIN / "sdpa-grade"), "push", str(folder), "--json-dir", str(out), "--config", str(config)]
    done = run(command, timeout=60, env=env)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "sdpa-grade push: needs the lms extra (PyJWT, cryptography): pip install 'sdpa-assignment[lms]'" in (
        done.stderr
    )
    offline = run([*command, "--dry-run", "--offline"], timeout=60, env=env)
    assert offline.returncode == 0, offline.stderr
    assert "alice: 40 of" in offline.stdout


@pytest.mark.timeout(60)
def test_an_offline_dry_run_says_what_would_be_sent_to_whom_without_a_platform(course, tmp_path):
    """--dry-run --offline with [lti] unset: each student's final score (the CSV's, deadlines applied) and the
    identity it would go to, said to be unchecked; a student the grader failed on listed as not sent; exit 0."""
    folder, out = course
    (folder / "dave").mkdir()
    (out / "dave.json").write_text(json.dumps({"score": 0.0, "max_score": TOTAL, "output": "", "tests": [],
                                               "grader_error": "the worker died"}))  # fmt: skip
    done = run([str(BIN / "sdpa-grade"), "push", str(folder), "--json-dir", str(out), "--dry-run", "--offline"],
               timeout=60, env={**os.environ, "SDPA_GRADE_CONFIG": ""})  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"alice: 40 of {TOTAL:g} would be sent to the learner whose email is alice" in done.stdout
    assert "offline: the platform was not asked" in done.stdout
    assert "not sent: dave: the grader failed on this submission" in done.stderr
    assert "sdpa-grade push: dry run (offline): 3 of 4 students' scores would be sent; nothing sent" in done.stderr


@pytest.mark.timeout(60)
def test_every_message_of_push_names_push(course, tool_key, tmp_path):
    """A class folder that is not one, and a class with a student not yet graded: the message names push (not
    --batch, not summary's --partial)."""
    folder, out = course
    key, public = tool_key
    with LtiPlatform(public, MEMBERS) as lms:
        config = _settings(tmp_path, lms.settings(str(key)))
        nowhere = _push(tmp_path / "nowhere", out, config)
        assert nowhere.returncode == 2 and f"sdpa-grade push: {tmp_path / 'nowhere'} is not a folder" in nowhere.stderr
        (folder / "erin").mkdir()
        missing = _push(folder, out, config)
        assert missing.returncode == 1, missing.stderr
        assert "sdpa-grade push: 1 of 4 students have no result yet: erin" in missing.stderr
        assert "--batch" not in missing.stderr + nowhere.stderr and "--partial" not in missing.stderr
        assert lms.gradebook() == {}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("twin", ["\u212aate@uni.edu", "KATE@uni.edu", "ｋａｔｅ@uni.edu"])
def test_two_students_one_learner_are_refused_before_anything_is_sent(a_class, tool_key, tmp_path, twin):
    """A folder named with a Kelvin sign, in another case or in full-width letters beside a classmate's: one
    normalisation (NFKC, case folded) makes them one learner, so the push refuses the class naming both, before any
    request (the platform gets none) and in the offline dry run alike; the classmate's score stays hers."""
    folder, out = a_class({"kate@uni.edu": 55.0, twin: 0.0})
    key, public = tool_key
    members = [member(0, "kate", flavour="canvas") | {"email": "kate@uni.edu"}, member(9, "prof", INSTRUCTOR)]
    with LtiPlatform(public, members, flavour="canvas") as lms:
        config = _settings(tmp_path, lms.settings(str(key)))
        done = _push(folder, out, config)
        book = lms.gradebook()
    assert done.returncode == 2, done.stdout + done.stderr
    named = [json.dumps(name, ensure_ascii=False) for name in ("kate@uni.edu", twin)]
    assert "compare as one" in done.stderr and all(name in done.stderr for name in named), done.stderr
    assert "nothing sent" in done.stderr and book == {}, book  # no column made, no score stored
    offline = run([str(BIN / "sdpa-grade"), "push", str(folder), "--json-dir", str(out), "--offline"], timeout=60,
                  env={**os.environ, "SDPA_GRADE_CONFIG": ""})  # fmt: skip
    assert offline.returncode == 2 and "compare as one" in offline.stderr, offline.stderr
