"""Who reads trace content on the metrics port (issue 23, item 10 and defect 8): without a token only loopback
clients (the embedded default), the guess limit on wrong tokens, logout that ends the session server-side, and
nosniff on every answer. Real aiohttp servers; the non-loopback peer is this host's own non-loopback address
(a server bound on 0.0.0.0, a client connecting from that address), so the rule is applied to a real peer."""

from __future__ import annotations

import asyncio
import http.client
import ipaddress
import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.cookies import SimpleCookie
from urllib.parse import urlencode

import pytest
from aiohttp import web

from monitor.auth import SESSION_COOKIE, session_value
from monitor.web.app import build_api_app
from monitor.web.server import WebServer
from tests.support.fake_reader import FakeReader, item
from tests.support.threaded_server import get, serve

pytestmark = pytest.mark.integration  # each test starts a process or a server

TOKEN = "access-token"
WAIT = 10.0
FREE = 5  # wrong tokens a client may send before it waits (GuessLimiter.free)
TRACE_CONTENT = ("/review", "/api/v1/results", f"/api/v1/traces/{'ab' * 16}", "/api/v1/breakdown", "/api/failing")
OPEN = ("/metrics", "/healthz", "/readyz", "/api/v1/openapi.json")


def non_loopback_address() -> str | None:
    """An IPv4 address of this host that is not loopback (the source a route to a TEST-NET address would use;
    a UDP connect sends nothing), or None."""
    for probe in ("192.0.2.1", "198.51.100.1", "10.255.255.1"):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
            try:
                udp.connect((probe, 9))
            except OSError:
                continue
            address = udp.getsockname()[0]
        if not ipaddress.ip_address(address).is_loopback:
            return address
    return None


@dataclass
class Answer:
    status: int
    headers: http.client.HTTPMessage
    body: str

    def json(self) -> dict:
        return json.loads(self.body)


def request(
    port: int,
    path: str,
    *,
    source: str = "127.0.0.1",
    headers: dict[str, str] | None = None,
    method: str = "GET",
    body: str | None = None,
) -> Answer:
    """One request to `port`, from `source` (the peer the server sees): to 127.0.0.1 from a loopback source,
    else to `source` itself (the server listens on 0.0.0.0)."""
    host = "127.0.0.1" if ipaddress.ip_address(source).is_loopback else source
    conn = http.client.HTTPConnection(host, port, timeout=WAIT, source_address=(source, 0))
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return Answer(response.status, response.headers, response.read().decode("utf-8", "replace"))
    finally:
        conn.close()


def post_login(port: int, token: str, source: str = "127.0.0.1") -> Answer:
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    return request(port, "/review/login", source=source, headers=form, method="POST", body=urlencode({"token": token}))


@contextmanager
def metrics_port(token: str | None = None, mode: str | None = None, host: str = "127.0.0.1") -> Iterator[int]:
    """The daemon's metrics port app (build_api_app) on `host`, port chosen by the OS; yields the port. `mode`:
    api.allow_unauthenticated (None: the default)."""
    reader = FakeReader(items=[item(1)])
    extra = {}
    if mode is not None:
        from monitor.web.access import Access  # here: the tests without a mode also run on the code before it

        extra["access"] = Access(token, mode)  # type: ignore[arg-type]
    app = build_api_app(
        lambda accept: (b"# metrics\n", "text/plain"), lambda: {"ok": True}, token, reader=reader, **extra
    )
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="access-test", daemon=True)
    thread.start()
    server = WebServer(app, host, 0, name="access-test")
    try:
        asyncio.run_coroutine_threadsafe(server.start(), loop).result(WAIT)
        yield server.bound_port
    finally:
        asyncio.run_coroutine_threadsafe(server.shutdown(0.5), loop).result(WAIT)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(WAIT)
        loop.close()


REMOTE = non_loopback_address()
needs_remote = pytest.mark.skipif(REMOTE is None, reason="this host has no non-loopback IPv4 address")


# --- without a token ----------------------------------------------------------------------------------------


@needs_remote
def test_by_default_trace_content_answers_loopback_clients_only() -> None:
    assert REMOTE is not None
    with metrics_port(host="0.0.0.0") as port:
        for path in TRACE_CONTENT:
            assert request(port, path).status in (200, 301, 404), path  # 404: no such trace; 301: /api/failing
            refused = request(port, path, source=REMOTE)
            assert refused.status == 403, path
            assert "loopback clients only" in refused.body and "bearer_token_file" in refused.body
        assert request(port, "/api/v1/results", source=REMOTE).json()["error"].startswith("trace content is served")
        page = request(port, "/review", source=REMOTE, headers={"Accept": "text/html"})
        assert page.headers["Content-Type"].startswith("text/html") and "forbidden" in page.body
        for path in OPEN:
            assert request(port, path, source=REMOTE).status == 200, path


@needs_remote
def test_allow_unauthenticated_any_opens_it_and_none_closes_it() -> None:
    assert REMOTE is not None
    with metrics_port(mode="any", host="0.0.0.0") as port:
        assert request(port, "/api/v1/results", source=REMOTE).status == 200
        assert request(port, "/review", source=REMOTE).status == 200
    with metrics_port(mode="none", host="0.0.0.0") as port:
        assert request(port, "/api/v1/results").status == 403  # not even loopback
        assert request(port, "/metrics").status == 200


@needs_remote
def test_with_a_token_a_remote_client_reads_with_it() -> None:
    assert REMOTE is not None
    with metrics_port(TOKEN, host="0.0.0.0") as port:
        assert request(port, "/api/v1/results", source=REMOTE).status == 401
        assert request(port, "/api/v1/results").status == 401  # a token set: loopback needs it too
        bearer = {"Authorization": f"Bearer {TOKEN}"}
        assert request(port, "/api/v1/results", source=REMOTE, headers=bearer).status == 200


class Peer:
    """A middleware placed before the access check that sets the request's peer address, for a host without a
    second address: the rule still reads `request.remote`, as it does for a real peer."""

    def __init__(self) -> None:
        self.remote = "127.0.0.1"

    @web.middleware
    async def middleware(self, request: web.Request, handler) -> web.StreamResponse:  # type: ignore[no-untyped-def]
        return await handler(request.clone(remote=self.remote))


@pytest.mark.parametrize("remote", ["203.0.113.7", "10.0.0.5", "2001:db8::5", "::ffff:198.51.100.1", "192.0.2.2"])
def test_the_rule_reads_the_requests_peer_address(remote: str) -> None:
    peer = Peer()
    app = build_api_app(lambda accept: (b"", "text/plain"), dict, None, reader=FakeReader(items=[item(1)]))
    app.middlewares.insert(0, peer.middleware)
    with serve(app) as base:
        assert get(f"{base}/api/v1/results")[0] == 200
        for loopback in ("127.0.0.2", "::1", "::ffff:127.0.0.1"):
            peer.remote = loopback
            assert get(f"{base}/api/v1/results")[0] == 200, loopback
        peer.remote = remote
        assert get(f"{base}/api/v1/results")[0] == 403
        assert get(f"{base}/metrics")[0] == 200


# --- guess limit ----------------------------------------------------------------------------------------------


def test_wrong_bearer_tokens_are_throttled_per_client() -> None:
    wrong = {"Authorization": "Bearer guess"}
    right = {"Authorization": f"Bearer {TOKEN}"}
    with metrics_port(TOKEN) as port:
        statuses = [request(port, "/api/v1/results", headers=wrong).status for _ in range(FREE)]
        assert statuses == [401] * FREE
        throttled = request(port, "/api/v1/results", headers=wrong)
        assert throttled.status == 429 and int(throttled.headers["Retry-After"]) >= 1
        assert "too many wrong tokens" in throttled.json()["error"]
        assert request(port, "/api/v1/results", headers=right).status == 429  # blocked: even the right one waits
        assert request(port, "/metrics").status == 200  # open paths are never throttled
        # another client (127.0.0.2 is loopback on Linux) is not affected
        assert request(port, "/api/v1/results", source="127.0.0.2", headers=right).status == 200
        for _ in range(FREE + 1):  # no credentials: not a guess
            assert request(port, "/api/v1/results", source="127.0.0.2").status == 401
        assert request(port, "/api/v1/results", source="127.0.0.2", headers=right).status == 200


def test_wrong_tokens_in_the_login_form_are_throttled() -> None:
    with metrics_port(TOKEN) as port:
        for _ in range(FREE):
            assert post_login(port, "guess").status == 401
        throttled = post_login(port, "guess")
        assert throttled.status == 429 and "Retry-After" in throttled.headers
        assert "too many" in throttled.body.lower()
        assert post_login(port, TOKEN).status == 429
        assert post_login(port, TOKEN, source="127.0.0.3").status == 303


# --- logout ---------------------------------------------------------------------------------------------------


def test_logout_ends_the_session_server_side() -> None:
    with metrics_port(TOKEN) as port:
        login = post_login(port, TOKEN)
        assert login.status == 303
        jar: SimpleCookie = SimpleCookie(login.headers["Set-Cookie"])
        cookie = {"Cookie": f"{SESSION_COOKIE}={jar[SESSION_COOKIE].value}"}
        assert request(port, "/api/v1/results", headers=cookie).status == 200
        other = {"Cookie": f"{SESSION_COOKIE}={session_value(TOKEN)}"}  # another browser's session
        logout = request(port, "/review/logout", headers=cookie, method="POST", body="")
        assert logout.status == 303
        replayed = request(port, "/api/v1/results", headers=cookie)  # the old cookie, kept by an attacker
        assert replayed.status == 401
        assert request(port, "/review", headers={**cookie, "Accept": "text/html"}).status == 303  # to the login form
        assert request(port, "/api/v1/results", headers=other).status == 200  # only that session ended


def test_an_expired_session_is_refused() -> None:
    with metrics_port(TOKEN) as port:
        expired = {"Cookie": f"{SESSION_COOKIE}={session_value(TOKEN, now=1_000_000.0)}"}
        assert request(port, "/api/v1/results", headers=expired).status == 401


# --- headers --------------------------------------------------------------------------------------------------


def test_every_answer_is_nosniff_and_api_answers_are_not_cached() -> None:
    with metrics_port(TOKEN) as port:
        right = {"Authorization": f"Bearer {TOKEN}"}
        for path, headers in (
            ("/api/v1/results", right),
            ("/api/v1/results", {}),
            ("/api/v1/openapi.json", {}),
            ("/api/v1/nothing", right),
            ("/metrics", {}),
        ):
            answer = request(port, path, headers=headers)
            assert answer.headers["X-Content-Type-Options"] == "nosniff", path
        assert request(port, "/api/v1/results", headers=right).headers["Cache-Control"] == "no-store"
