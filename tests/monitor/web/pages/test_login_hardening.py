"""Issue 38: concurrent wrong logins are all counted before any is compared past the limit (the right token
among them is refused, and clears nothing), and a logout's revocation survives a restart of the daemon."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from http.cookies import SimpleCookie
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import pytest

from monitor.auth import REVOKED_SESSIONS_FILE, SESSION_COOKIE, RevokedSessions
from monitor.web.access import Access
from monitor.web.app import build_api_app
from tests.monitor.web.pages.conftest import TOKEN
from tests.monitor.web.pages.sample import evaluator_infos, sample_traces
from tests.support.fake_reader import FakeReader
from tests.support.metrics_port import fetch, post_form, serve

pytestmark = pytest.mark.integration  # each test starts a process or a server

FREE = 5  # wrong tokens a client may send before it waits (GuessLimiter.free)
HELD = 30  # wrong-token posts held open on their last byte
WAIT = 10.0


def _login_request(host: str, port: int, token: str) -> bytes:
    body = urlencode({"token": token, "next": "/review"}).encode()
    head = (
        f"POST /review/login HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n"
        f"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def _held(base: str, token: str) -> tuple[socket.socket, bytes]:
    """A login post of `token` sent but for its last byte; the socket and that byte."""
    parts = urlsplit(base)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    data = _login_request(host, port, token)
    sock = socket.create_connection((host, port), timeout=WAIT)
    sock.sendall(data[:-1])
    return sock, data[-1:]


def _finish(sock: socket.socket, last: bytes) -> tuple[int, str]:
    """Send the last byte and read the whole answer (the server closes): its status and headers."""
    with sock:
        sock.sendall(last)
        chunks = []
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    answer = b"".join(chunks).decode("latin-1")
    head = answer.split("\r\n\r\n", 1)[0]
    return int(head.split(" ", 2)[1]), head


def _site() -> AbstractContextManager[str]:
    return serve(build_api_app(lambda accept: (b"", "text/plain"), lambda: {"ok": True}, TOKEN, reader=_reader()))


def _reader() -> FakeReader:
    return FakeReader.of(sample_traces())


def test_wrong_logins_held_on_their_last_byte_are_all_counted_and_the_right_token_waits() -> None:
    with _site() as base:
        wrong = [_held(base, "guess") for _ in range(HELD)]
        right = _held(base, TOKEN)  # held with them: it passed any check made before the body was read
        time.sleep(0.5)  # every post is in its handler, waiting for its body
        statuses = [_finish(sock, last)[0] for sock, last in wrong]
        assert statuses.count(401) == FREE, statuses  # compared while within the free failures
        assert statuses.count(429) == HELD - FREE, statuses  # the rest refused, uncompared
        status, head = _finish(*right)
        assert status == 429 and "Retry-After:" in head, head  # the right token waits like any other
        assert SESSION_COOKIE not in head
        # The right token cleared nothing: the client is still throttled, on the form and on the API.
        again = post_form(base, "/review/login", urlencode({"token": TOKEN}))
        assert again.status == 429 and int(again.headers["Retry-After"]) >= 1
        assert fetch(base, "/review", {"Authorization": f"Bearer {TOKEN}"}).status == 429


def test_a_right_token_does_not_reset_other_guesses_from_the_same_client() -> None:
    """A script on the guesser's address that knows the token (bearer, every few guesses) must not reset them."""
    with _site() as base:
        statuses = []
        for _ in range(3 * FREE):
            statuses.append(post_form(base, "/review/login", urlencode({"token": "guess"})).status)
            fetch(base, "/review", {"Authorization": f"Bearer {TOKEN}"})
        assert statuses[:FREE] == [401] * FREE
        assert set(statuses[FREE:]) == {429}, statuses


@contextmanager
def _daemon_site(data: Path) -> Iterator[str]:
    """The metrics port with the access policy the daemon builds for a store in `data` (a new one each time)."""
    access = Access(TOKEN, revoked=RevokedSessions.of_store(str(data / "results.db")))
    app = build_api_app(
        lambda accept: (b"", "text/plain"),
        lambda: {"ok": True},
        TOKEN,
        reader=_reader(),
        evaluators_info=evaluator_infos,
        access=access,
    )
    with serve(app) as base:
        yield base


def _cookie(headers: list[str]) -> str:
    jar: SimpleCookie = SimpleCookie()
    for header in headers:
        jar.load(header)
    return jar[SESSION_COOKIE].value


def test_a_logout_is_still_refused_after_a_restart(tmp_path: Path) -> None:
    with _daemon_site(tmp_path) as base:
        login = post_form(base, "/review/login", urlencode({"token": TOKEN, "next": "/review"}))
        assert login.status == 303
        value = _cookie(login.headers.get_all("Set-Cookie") or [])
        kept = post_form(base, "/review/login", urlencode({"token": TOKEN}))  # another session, not logged out
        other = _cookie(kept.headers.get_all("Set-Cookie") or [])
        cookie = {"Cookie": f"{SESSION_COOKIE}={value}"}
        assert fetch(base, "/review", cookie).status == 200
        assert post_form(base, "/review/logout", "", cookie).status == 303
        assert fetch(base, "/review", cookie).status == 401
    assert (tmp_path / REVOKED_SESSIONS_FILE).is_file()
    with _daemon_site(tmp_path) as base:  # a new daemon on the same data directory
        assert fetch(base, "/review", cookie).status == 401  # the logged-out cookie replayed: still refused
        assert fetch(base, "/review", {"Cookie": f"{SESSION_COOKIE}={other}"}).status == 200


def test_a_damaged_revocations_file_is_no_crash(tmp_path: Path) -> None:
    for junk in (b"\xff\xfe", b"[1, 2]", b'{"revoked": {"n": "x", "m": true, "k": 1e308}}', b"{" * 100_000):
        (tmp_path / REVOKED_SESSIONS_FILE).write_bytes(junk)
        with _daemon_site(tmp_path) as base:
            login = post_form(base, "/review/login", urlencode({"token": TOKEN}))
            cookie = {"Cookie": f"{SESSION_COOKIE}={_cookie(login.headers.get_all('Set-Cookie') or [])}"}
            assert fetch(base, "/review", cookie).status == 200, junk
            assert post_form(base, "/review/logout", "", cookie).status == 303
        with _daemon_site(tmp_path) as base:
            assert fetch(base, "/review", cookie).status == 401, junk  # the file was rewritten whole
