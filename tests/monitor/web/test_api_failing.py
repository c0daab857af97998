"""/api/failing, deprecated: a 301 to /api/v1/results?outcome=fail with its query mapped (issue 24, item 7).

The redirect reads nothing (before, the endpoint read the store through the writer's connection, under its
lock); following it, the v1 API answers the failing results from the review reader. The access rules come
first: a client without credentials gets its refusal, never the redirect. Real aiohttp servers and stores."""

from __future__ import annotations

import http.client
import logging
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from monitor.auth import SESSION_COOKIE, session_value
from monitor.outcomes import ResultRow, TraceOutcome
from monitor.review.of_store import reader_of
from monitor.store.sqlite import ResultStore
from monitor.web.app import build_api_app
from tests.support.threaded_server import get, serve

pytestmark = pytest.mark.integration  # each test starts a process or a server

TOKEN = "failing-token"
BEARER = {"Authorization": f"Bearer {TOKEN}"}
WAIT = 10.0
A, B, C = "a" * 32, "b" * 32, "c" * 32


def result(evaluator: str, passed: bool, explanation: str) -> ResultRow:
    return ResultRow(None, "planner", None, evaluator, "trace", float(passed), passed, None, explanation, None, 0.001)


def trace(trace_id: str, *rows: ResultRow) -> TraceOutcome:
    return TraceOutcome(trace_id, "checkout", 1.0, False, (), (), "in", "out", 2, 10.0, 0.0, rows)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[ResultStore]:
    """A real SQLite store (`results: all`): A fails error_free, B fails tool_success_rate, C passes both."""
    opened = ResultStore(tmp_path / "r.db")
    opened.write(
        [
            trace(A, result("error_free", False, "tool failed"), result("tool_success_rate", True, "ok")),
            trace(B, result("tool_success_rate", False, "2 of 3 tools failed")),
            trace(C, result("error_free", True, "fine"), result("tool_success_rate", True, "ok")),
        ]
    )
    yield opened
    opened.close()


@contextmanager
def port(store: ResultStore | None, token: str | None = TOKEN) -> Iterator[str]:
    reader = reader_of(store) if store is not None else None
    app = build_api_app(lambda accept: (b"", "text/plain"), dict, token, reader=reader)
    try:
        with serve(app) as base:
            yield base
    finally:
        if reader is not None:
            reader.close()


def unfollowed(base: str, path: str, headers: dict[str, str] | None = None) -> http.client.HTTPResponse:
    """GET `path` without following a redirect; the response is read."""
    parts = urllib.parse.urlsplit(base)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=WAIT)
    try:
        conn.request("GET", path, headers=headers or {})
        answer = conn.getresponse()
        answer.read()
        return answer
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("query", "location"),
    [
        ("", "/api/v1/results?outcome=fail&limit=50"),
        ("?evaluator=error_free&limit=7", "/api/v1/results?outcome=fail&evaluator=error_free&limit=7"),
        ("?limit=0", "/api/v1/results?outcome=fail&limit=1"),  # /api/failing's clamp: v1 would refuse 0
        ("?limit=100000", "/api/v1/results?outcome=fail&limit=500"),
        ("?evaluator=a%20b%26c&other=x", "/api/v1/results?outcome=fail&evaluator=a+b%26c&limit=50"),  # other: ignored
        ("?evaluator=", "/api/v1/results?outcome=fail&limit=50"),
    ],
)
def test_it_redirects_permanently_to_v1_results_with_its_query_mapped(query: str, location: str) -> None:
    with port(None) as base:
        answer = unfollowed(base, f"/api/failing{query}", BEARER)
    assert answer.status == 301
    assert answer.headers["Location"] == location
    assert answer.headers["Deprecation"] == "true"
    assert answer.headers["Link"] == '</api/v1/results?outcome=fail>; rel="successor-version"'
    assert answer.headers["Cache-Control"] == "no-store"


def test_following_it_yields_the_failing_results(store: ResultStore) -> None:
    with port(store) as base:
        for credentials in (BEARER, {"Cookie": f"{SESSION_COOKIE}={session_value(TOKEN)}"}):
            status, _, body = get(f"{base}/api/failing?evaluator=error_free", credentials)
            assert status == 200, body
            assert [(i["trace_id"], i["outcome"], i["explanation"]) for i in body["items"]] == [
                (A, "fail", "tool failed")
            ]
        status, _, body = get(f"{base}/api/failing", BEARER)
        assert status == 200
        assert {(i["trace_id"], i["evaluator"]) for i in body["items"]} == {(A, "error_free"), (B, "tool_success_rate")}
        assert {i["outcome"] for i in body["items"]} == {"fail"}
        status, _, body = get(f"{base}/api/failing?limit=1", BEARER)
        assert status == 200 and len(body["items"]) == 1 and body["next_cursor"]


def test_without_credentials_the_answer_is_the_refusal_not_the_redirect(store: ResultStore) -> None:
    with port(store) as base:
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            answer = unfollowed(base, "/api/failing?evaluator=error_free", headers)
            assert answer.status == 401
            assert "Location" not in answer.headers and "Link" not in answer.headers
            assert answer.headers["WWW-Authenticate"].startswith("Bearer")
        assert get(f"{base}/api/failing")[0] == 401


def test_parameters_it_refused_are_still_400() -> None:
    with port(None) as base:
        for query in ("limit=%C2%B2", "limit=-1", f"evaluator={'e' * 5000}", f"limit={'9' * 40}"):
            answer = unfollowed(base, f"/api/failing?{query}", BEARER)
            assert answer.status == 400, query
            assert "Location" not in answer.headers


def test_it_answers_while_the_writer_holds_its_connection(store: ResultStore) -> None:
    """Before, /api/failing read through the writer's connection and waited for its lock (a long write);
    now neither the redirect nor the v1 read it leads to takes that lock."""
    with port(store) as base, store._lock:
        status, _, body = get(f"{base}/api/failing?evaluator=error_free", BEARER)
    assert status == 200 and [i["trace_id"] for i in body["items"]] == [A]


def test_without_a_store_following_it_is_the_v1_503() -> None:
    with port(None) as base:
        status, _, body = get(f"{base}/api/failing", BEARER)
    assert status == 503
    assert body["error"].startswith("review unavailable: ")


def test_a_broken_store_answers_503_without_a_traceback_per_request(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "r.db"
    path.write_bytes(b"not a database " * 500)
    store = ResultStore(path)  # starts unavailable (and retries every 30 s)
    assert not store.available
    try:
        with caplog.at_level(logging.INFO), port(store, token=None) as base:
            caplog.clear()
            answers = [get(f"{base}/api/failing") for _ in range(5)]
    finally:
        store.close()
    assert {status for status, _, _ in answers} == {503}
    assert all(body["error"].startswith("review unavailable") for _, _, body in answers)
    assert not [r for r in caplog.records if r.exc_info], [r.getMessage() for r in caplog.records]
