"""Login form, session cookie, logout, the browser redirect to the form, and `next` kept on this site only."""

from __future__ import annotations

import http.client
import ssl
import subprocess
from http.cookies import SimpleCookie
from pathlib import Path
from urllib.parse import quote, urlencode

import pytest

from monitor.auth import SESSION_COOKIE, SESSION_TTL, session_authorized, session_value
from monitor.web.pages.login import safe_next
from tests.monitor.web.pages.conftest import TOKEN, Site
from tests.monitor.web.pages.sample import evaluator_infos, sample_traces
from tests.support.fake_reader import FakeReader
from tests.support.metrics_port import Answer, fetch, post_form, review_app, serve

HTML = {"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}


def login(site: Site, token: str, next_path: str = "/review", headers: dict[str, str] | None = None) -> Answer:
    return post_form(site.base, "/review/login", urlencode({"token": token, "next": next_path}), headers)


def session_cookie(answer: Answer) -> SimpleCookie:
    cookie: SimpleCookie = SimpleCookie()
    for header in answer.headers.get_all("Set-Cookie") or []:
        cookie.load(header)
    return cookie


def test_a_browser_without_a_session_is_sent_to_the_login_form(review_site: Site) -> None:
    answer = fetch(review_site.base, "/review?evaluator=latency&since=1h", HTML)
    assert answer.status == 303
    assert answer.location == "/review/login?next=" + quote("/review?evaluator=latency&since=1h", safe="")
    form = fetch(review_site.base, answer.location, HTML)
    assert form.status == 200 and 'type="password" name="token"' in form.body
    assert 'name="next" value="/review?evaluator=latency&amp;since=1h"' in form.body
    api_client = fetch(review_site.base, "/review")  # no HTML Accept: the plain 401
    assert api_client.status == 401 and api_client.headers["WWW-Authenticate"].startswith("Bearer")
    assert fetch(review_site.base, "/api/anything", HTML).status == 401  # only /review gets the form


def test_login_sets_the_session_cookie_and_returns_to_next(review_site: Site) -> None:
    answer = login(review_site, f"  {TOKEN}\n", "/review?evaluator=latency")
    assert answer.status == 303 and answer.location == "/review?evaluator=latency"
    morsel = session_cookie(answer)[SESSION_COOKIE]
    assert session_authorized(morsel.value, TOKEN) and TOKEN not in str(answer.headers)
    assert not session_authorized(morsel.value, "other-token")
    assert morsel["httponly"] and morsel["samesite"] == "Strict" and morsel["path"] == "/"
    assert morsel["max-age"] == str(int(SESSION_TTL))
    assert not morsel["secure"]  # plain HTTP: a Secure cookie would never come back
    page = fetch(review_site.base, "/review", {"Cookie": f"{SESSION_COOKIE}={morsel.value}"})
    assert page.status == 200 and "log out" in page.body
    assert fetch(review_site.base, "/review", {"Authorization": f"Bearer {TOKEN}"}).status == 200


def test_a_wrong_token_gets_the_form_again_with_a_message(review_site: Site) -> None:
    for wrong in ("nope", "", TOKEN + "x", TOKEN[:-1]):
        answer = login(review_site, wrong, "/review/breakdown")
        assert answer.status == 401 and "not the API token" in answer.body, wrong
        assert SESSION_COOKIE not in (answer.headers.get("Set-Cookie") or "")
        assert 'name="next" value="/review/breakdown"' in answer.body
    forged = {"Cookie": f"{SESSION_COOKIE}={session_value('other-token')}"}
    assert fetch(review_site.base, "/review", forged).status == 401


@pytest.mark.parametrize(
    "next_path",
    [
        "https://evil.example/review",
        "//evil.example/review",
        "/\\evil.example",
        "\\\\evil.example/review",
        "/review/../api/v1/results",
        "/review/./x",
        "/api/v1/results",
        "javascript:alert(1)",
        "/reviewer",
        "/review\r\nSet-Cookie: x=1",
        "/review/login",
        "review",
        "",
    ],
)
def test_next_outside_the_review_pages_goes_to_review(review_site: Site, next_path: str) -> None:
    assert login(review_site, TOKEN, next_path).location == "/review"
    show = fetch(review_site.base, "/review/login?next=" + quote(next_path, safe=""), HTML)
    assert 'name="next" value="/review"' in show.body


@pytest.mark.parametrize("next_path", ["/review", "/review?evaluator=a&since=1h", "/review/traces/" + "ab" * 16])
def test_next_under_review_is_kept(next_path: str) -> None:
    assert safe_next(next_path) == next_path


def test_cross_site_posts_are_refused(review_site: Site) -> None:
    answer = login(review_site, TOKEN, headers={"Sec-Fetch-Site": "cross-site"})
    assert answer.status == 403 and SESSION_COOKIE not in (answer.headers.get("Set-Cookie") or "")
    assert post_form(review_site.base, "/review/logout", "", {"Sec-Fetch-Site": "same-site"}).status == 403
    assert login(review_site, TOKEN, headers={"Sec-Fetch-Site": "same-origin"}).status == 303


def test_logout_clears_the_cookie_even_without_a_session(review_site: Site) -> None:
    answer = post_form(review_site.base, "/review/logout", "", {"Cookie": f"{SESSION_COOKIE}=stale"})
    assert answer.status == 303 and answer.location == "/review/login"
    morsel = session_cookie(answer)[SESSION_COOKIE]
    assert morsel.value == "" and (morsel["max-age"] == "0" or "1970" in morsel["expires"])
    assert morsel["path"] == "/"


def test_already_logged_in_skips_the_form(review_site: Site) -> None:
    cookie = {"Cookie": f"{SESSION_COOKIE}={session_value(TOKEN)}", **HTML}
    answer = fetch(review_site.base, "/review/login?next=%2Freview%2Fbreakdown", cookie)
    assert answer.status == 303 and answer.location == "/review/breakdown"


@pytest.mark.integration
def test_without_a_token_the_page_is_open_and_login_says_so() -> None:
    with serve(review_app(FakeReader.of(sample_traces()), None, evaluator_infos)) as base:
        page = fetch(base, "/review", HTML)
        assert page.status == 200 and "no token configured" in page.body and "log out" not in page.body
        assert fetch(base, "/review/login?next=%2Freview%2Fbreakdown", HTML).location == "/review/breakdown"
        answer = post_form(base, "/review/login", urlencode({"token": "x"}))
        assert answer.status == 303 and answer.location == "/review" and not answer.headers.get("Set-Cookie")


def _certificate(tmp_path: Path) -> tuple[Path, Path]:
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    command = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert)]
    command += ["-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1"]
    subprocess.run(command, check=True, capture_output=True, timeout=60)
    return key, cert


@pytest.mark.integration
def test_over_tls_the_cookie_is_secure(tmp_path: Path) -> None:
    key, cert = _certificate(tmp_path)
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_context.load_cert_chain(cert, key)
    with serve(review_app(FakeReader.of(sample_traces()), TOKEN), server_context) as base:
        port = int(base.rsplit(":", 1)[1])
        conn = http.client.HTTPSConnection(
            "127.0.0.1", port, context=ssl.create_default_context(cafile=cert), timeout=10
        )
        form = {"Content-Type": "application/x-www-form-urlencoded"}
        conn.request("POST", "/review/login", urlencode({"token": TOKEN}), form)
        response = conn.getresponse()
        cookie: SimpleCookie = SimpleCookie(response.headers["Set-Cookie"])
        conn.close()
    assert response.status == 303 and cookie[SESSION_COOKIE]["secure"] and cookie[SESSION_COOKIE]["httponly"]
