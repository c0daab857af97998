"""`GET /api/v1/sessions` and `/api/v1/sessions/{id}` on a real socket over a real store (SQLite and PostgreSQL,
rows as the schema v5 contract says the write side leaves them): filters, pages, one conversation with its turns and
verdicts, 404, 400, 401 and 503, and answers that conform to the OpenAPI document."""

from __future__ import annotations

import sqlite3
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

from monitor.review.models import ReviewReader
from monitor.web.openapi import PREFIX, openapi_document
from tests.monitor.review.test_session_reader import seeded, tid
from tests.monitor.web.test_api_v1 import TOKEN, api
from tests.monitor.web.test_openapi import conforms
from tests.support.backends import Backend, sqlite_backend
from tests.support.fake_reader import FakeReader
from tests.support.threaded_server import get

pytestmark = pytest.mark.integration  # each test starts a process or a server

BEARER = {"Authorization": f"Bearer {TOKEN}"}
LONE = tid(60)


@pytest.fixture(params=["sqlite", "postgres"])
def store_reader(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ReviewReader]:
    if request.param == "postgres":
        backend = Backend("postgres", request.getfixturevalue("postgres_url"))
    else:
        backend = sqlite_backend(tmp_path)
    now, _ = seeded(backend)
    backend.execute(  # a trace that is no turn of a stored conversation
        "INSERT INTO traces (trace_id, created_at, service, span_count, duration_ms, has_errors)"
        " VALUES (?, ?, 'faq-bot', 1, 5.0, 0)",
        (LONE, now - 650),
    )
    reader = backend.reader()
    yield reader
    reader.close()  # type: ignore[attr-defined]


def _schema(path: str, status: str) -> dict:
    document = openapi_document()
    return document["paths"][f"{PREFIX}/{path}"]["get"]["responses"][status]["content"]["application/json"]["schema"]


def test_sessions_list_filters_pages_and_conforms(store_reader: ReviewReader) -> None:
    document = openapi_document()
    with api(store_reader, token=TOKEN) as base:
        status, _, body = get(f"{base}{PREFIX}/sessions", BEARER)
        assert status == 200
        assert [s["session_id"] for s in body["items"]] == ["conv-tie", "conv-clean", "conv-rephrase"]
        assert body["items"][2]["trace_ids"] == [tid(1), tid(2), tid(3)]
        assert conforms(document, _schema("sessions", "200"), body) == []

        status, _, body = get(f"{base}{PREFIX}/sessions?failing=true&since=1h", BEARER)
        assert [s["session_id"] for s in body["items"]] == ["conv-rephrase"]
        assert body["items"][0]["verdicts"][0] == {
            "evaluator": "user_rephrase",
            "outcome": "fail",
            "score": None,
            "turn": 2,
        }
        status, _, body = get(f"{base}{PREFIX}/sessions?evaluator=user_rephrase&service=faq-bot", BEARER)
        assert [s["session_id"] for s in body["items"]] == ["conv-clean"]

        seen, query = [], "limit=1"
        for _ in range(5):
            status, _, body = get(f"{base}{PREFIX}/sessions?{query}", BEARER)
            assert status == 200
            seen += [s["session_id"] for s in body["items"]]
            if body["next_cursor"] is None:
                break
            query = urllib.parse.urlencode({"limit": 1, "cursor": body["next_cursor"]})
        assert seen == ["conv-tie", "conv-clean", "conv-rephrase"]

        for query, message in (
            ("failing=maybe", "failing must be true or false"),
            ("cursor=garbage", "invalid cursor"),
            ("limit=0", "limit must be from 1 to 200"),
            ("outcome=fail", "unknown parameter 'outcome'"),
        ):
            status, _, body = get(f"{base}{PREFIX}/sessions?{query}", BEARER)
            assert status == 400 and message in body["error"], query
            assert conforms(document, _schema("sessions", "400"), body) == []
        assert get(f"{base}{PREFIX}/sessions")[0] == 401
        assert get(f"{base}{PREFIX}/sessions/conv-clean")[0] == 401


def test_one_session_its_turns_and_verdicts_and_404(store_reader: ReviewReader) -> None:
    document = openapi_document()
    with api(store_reader, token=TOKEN) as base:
        status, _, body = get(f"{base}{PREFIX}/sessions/conv-rephrase", BEARER)
        assert status == 200
        assert conforms(document, _schema("sessions/{session_id}", "200"), body) == []
        assert body["session"]["session_id"] == "conv-rephrase" and body["session"]["ended"] == "idle"
        assert [t["trace_id"] for t in body["turns"]] == [tid(1), tid(2), tid(3)]
        assert body["turns"][1]["errors"] == [{"kind": "tool", "name": "lookup_order", "message": "HTTP 503"}]
        named = {r["evaluator"]: (r["turn"], r["turn_trace_id"]) for r in body["results"]}
        assert named == {
            "user_rephrase": (2, tid(2)),
            "human_handoff_request": (3, tid(3)),
            "conversation_completion": (None, None),
        }
        status, _, body = get(f"{base}{PREFIX}/results?evaluator=user_rephrase&outcome=fail", BEARER)
        assert [(r["level"], r["session_id"], r["trace_id"]) for r in body["items"]] == [
            ("session", "conv-rephrase", tid(3))
        ]
        status, _, body = get(f"{base}{PREFIX}/traces/{tid(3)}", BEARER)
        assert {r["session_id"] for r in body["results"]} == {"conv-rephrase"}
        status, _, body = get(f"{base}{PREFIX}/sessions/{urllib.parse.quote('no such/conv', safe='')}", BEARER)
        assert status == 404 and "unknown session 'no such/conv'" in body["error"]
        assert conforms(document, _schema("sessions/{session_id}", "404"), body) == []
        status, _, body = get(f"{base}{PREFIX}/sessions/{'x' * 300}", BEARER)
        assert status == 400 and "session id must be 1 to 256 characters" in body["error"]


def test_a_trace_names_the_conversation_it_is_a_turn_of(store_reader: ReviewReader) -> None:
    """`session_id` of /api/v1/traces/{id}: by the session's results, by its turns, or null for a lone trace."""
    document = openapi_document()
    with api(store_reader, token=TOKEN) as base:
        for trace_id, session_id in ((tid(3), "conv-rephrase"), (tid(1), "conv-rephrase"), (tid(4), "conv-clean")):
            status, _, body = get(f"{base}{PREFIX}/traces/{trace_id}", BEARER)
            assert status == 200 and body["session_id"] == session_id, trace_id
            assert conforms(document, _schema("traces/{trace_id}", "200"), body) == []
        status, _, body = get(f"{base}{PREFIX}/traces/{LONE}", BEARER)
        assert status == 200 and body["summary"]["trace_id"] == LONE and body["session_id"] is None
        assert conforms(document, _schema("traces/{trace_id}", "200"), body) == []


def test_without_a_reader_or_with_a_failing_store_sessions_are_503() -> None:
    failing = FakeReader(fail_with=sqlite3.OperationalError("database disk image is malformed"))
    for reader, reason in (
        (None, "the result store is disabled (store.enabled: false)"),
        (failing, "OperationalError: database disk image is malformed"),
    ):
        with api(reader) as base:
            for path in ("sessions", "sessions/conv-1"):
                status, _, body = get(f"{base}{PREFIX}/{path}")
                assert status == 503, path
                assert body == {"error": f"review unavailable: {reason}"}
