"""/api/v1 on a real socket with the in-memory reader: filters, pagination, auth, errors (/api/failing, its
deprecated predecessor, is in test_api_failing.py)."""

from __future__ import annotations

import sqlite3
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from monitor.auth import SESSION_COOKIE, session_value
from monitor.review.models import EvaluatorStatus, EvaluatorWindow, ResultFilter, ReviewReader
from monitor.web.app import build_api_app
from tests.support.fake_reader import FakeReader, item, trace_detail
from tests.support.threaded_server import get, serve

pytestmark = pytest.mark.integration  # each test starts a process or a server

TOKEN = "review-token"
TRACE = "ab" * 16


def evaluators() -> list[EvaluatorStatus]:
    return [
        EvaluatorStatus(
            name="error_free",
            kind="rule",
            level="trace",
            threshold=0.5,
            alert_min_pass_ratio=0.9,
            alert_window=300.0,
            alert_state="firing",
            windows=[EvaluatorWindow(window="5m", samples=4, pass_ratio=0.25)],
        )
    ]


@contextmanager
def api(reader: ReviewReader | None, token: str | None = None, **kw: Any) -> Iterator[str]:
    app = build_api_app(
        lambda accept: (b"", "text/plain"), dict, token, reader=reader, evaluators_info=evaluators, **kw
    )
    with serve(app) as base:
        yield base


@pytest.fixture
def reader() -> FakeReader:
    fake = FakeReader(items=[item(n) for n in range(1, 24)])
    fake.items.append(item(30, trace_id=TRACE, outcome="skip", score=None, skip_reason="needs_ground_truth"))
    fake.traces[TRACE] = trace_detail(TRACE, [fake.items[-1]])
    return fake


def test_every_filter_reaches_the_reader_and_times_are_parsed(reader: FakeReader) -> None:
    query = {
        "evaluator": "error_free",
        "service": "checkout",
        "variant": "1.5",
        "agent": "planner",
        "model": "gpt-4o",
        "outcome": "fail",
        "since": "2023-11-14T22:13:20Z",
        "until": "1700003600",
        "trace_id": TRACE.upper(),
        "limit": "7",
    }
    with api(reader) as base:
        status, _, body = get(f"{base}/api/v1/results?{urllib.parse.urlencode(query)}")
        assert status == 200, body
        where, limit, cursor = reader.calls[-1][1]
        assert where == ResultFilter(
            evaluator="error_free",
            service="checkout",
            variant="1.5",
            agent="planner",
            model="gpt-4o",
            outcome="fail",
            since=1_700_000_000.0,
            until=1_700_003_600.0,
            trace_id=TRACE,  # upper case accepted, passed on in lower case
        )
        assert (limit, cursor) == (7, None)
        assert body == {"items": [], "next_cursor": None}  # the filters exclude every stored item

        before = time.time()
        status, _, _ = get(f"{base}/api/v1/results?since=1h&until=30m")
        after = time.time()
        where = reader.calls[-1][1][0]
        assert status == 200
        assert before - 3600 <= where.since <= after - 3600
        assert before - 1800 <= where.until <= after - 1800
        assert reader.calls[-1][1][1] == 50  # the default limit

        status, _, body = get(f"{base}/api/v1/results?outcome=skip")
        assert status == 200
        assert [i["trace_id"] for i in body["items"]] == [TRACE]
        assert body["items"][0]["skip_reason"] == "needs_ground_truth"


def test_pagination_follows_next_cursor_to_the_end_newest_first(reader: FakeReader) -> None:
    with api(reader) as base:
        seen: list[str] = []
        url = f"{base}/api/v1/results?outcome=fail&limit=5"
        cursor = None
        for _ in range(10):  # 23 failing results: 5 pages
            status, _, page = get(url + (f"&cursor={urllib.parse.quote(cursor)}" if cursor else ""))
            assert status == 200, page
            seen += [i["trace_id"] for i in page["items"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert seen == [f"{n:032x}" for n in range(23, 0, -1)]
        assert [c[1][2] is None for c in reader.calls].count(True) == 1  # every later page sent its cursor


def test_trace_detail_unknown_trace_and_malformed_id(reader: FakeReader) -> None:
    with api(reader) as base:
        status, _, body = get(f"{base}/api/v1/traces/{TRACE.upper()}")
        assert status == 200
        assert reader.calls[-1] == ("trace", TRACE)
        assert body["summary"]["trace_id"] == TRACE
        assert [s["kind"] for s in body["steps"]] == ["agent", "llm", "tool"]
        assert body["results"][0]["outcome"] == "skip"

        status, headers, body = get(f"{base}/api/v1/traces/{'cd' * 16}")
        assert status == 404 and headers["Content-Type"].startswith("application/json")
        assert body == {"error": f"unknown trace {'cd' * 16}: never stored, or pruned after the store's retention"}

        for bad in ("abc", "zz" * 16, "ab" * 17):
            status, _, body = get(f"{base}/api/v1/traces/{bad}")
            assert status == 400, bad
            assert body["error"].startswith("trace id must be 32 hex characters")


def test_breakdown_passes_its_parameters_and_answers_the_readers_groups(reader: FakeReader) -> None:
    reader.items.append(item(40, service="search", outcome="pass", score=1.0))
    with api(reader) as base:
        status, _, body = get(f"{base}/api/v1/breakdown?by=service&evaluator=error_free&since=1700000001")
        assert status == 200, body
        assert reader.calls[-1] == ("breakdown", ("service", "error_free", 1_700_000_001.0, None, None))
        assert body["by"] == "service"
        assert [(g["value"], g["passed"], g["failed"]) for g in body["groups"]] == [
            ("checkout", 0, 23),
            ("search", 1, 0),
        ]

        status, _, body = get(f"{base}/api/v1/breakdown")  # by defaults to service
        assert status == 200 and reader.calls[-1] == ("breakdown", ("service", None, None, None, None))
        status, _, body = get(f"{base}/api/v1/breakdown?by=tool")
        assert status == 200 and body["groups"] == [
            {"value": "lookup", "passed": 0, "failed": 0, "skipped": 1, "pass_ratio": None}
            | {"calls": 0, "cost_usd": None, "unpriced_calls": 0}  # spend: none in the fake reader
        ]


def test_variant_filters_results_and_breakdowns_and_every_item_carries_it(reader: FakeReader) -> None:
    reader.items += [item(41, variant="1.5"), item(42, variant="1.5", outcome="pass", score=1.0)]
    reader.items.append(item(43, variant="1.4"))
    with api(reader) as base:
        status, _, body = get(f"{base}/api/v1/results?variant=1.5&outcome=")
        assert status == 200, body
        assert reader.calls[-1][1][0] == ResultFilter(variant="1.5")
        assert [(i["trace_id"], i["variant"], i["outcome"]) for i in body["items"]] == [
            (f"{42:032x}", "1.5", "pass"),
            (f"{41:032x}", "1.5", "fail"),
        ]
        status, _, body = get(f"{base}/api/v1/results?limit=2")
        assert [i["variant"] for i in body["items"]] == ["1.4", "1.5"]  # always there, "" without a variant
        status, _, body = get(f"{base}/api/v1/results?trace_id={TRACE}")
        assert body["items"][0]["variant"] == ""

        status, _, body = get(f"{base}/api/v1/breakdown?by=variant&evaluator=error_free")
        assert status == 200, body
        assert reader.calls[-1] == ("breakdown", ("variant", "error_free", None, None, None))
        assert body["by"] == "variant" and body["variant"] is None
        assert [(g["value"], g["passed"], g["failed"], g["skipped"]) for g in body["groups"]] == [
            ("", 0, 23, 1),
            ("1.4", 0, 1, 0),
            ("1.5", 1, 1, 0),
        ]
        status, _, body = get(f"{base}/api/v1/breakdown?by=service&variant=1.5")
        assert status == 200 and reader.calls[-1] == ("breakdown", ("service", None, None, None, "1.5"))
        assert body["variant"] == "1.5" and [(g["value"], g["failed"]) for g in body["groups"]] == [("checkout", 1)]

        status, _, body = get(f"{base}/api/v1/traces/{TRACE}")
        assert status == 200 and body["summary"]["variant"] == ""


def test_evaluators_answer_what_the_callable_lists(reader: FakeReader) -> None:
    with api(reader) as base:
        status, _, body = get(f"{base}/api/v1/evaluators")
    assert status == 200
    assert body == [info.model_dump(mode="json") for info in evaluators()]


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("results?outcome=maybe", "outcome must be one of pass, fail, skip, got 'maybe'"),
        ("results?limit=ten", "limit must be a number from 1 to 500, got 'ten'"),
        ("results?limit=0", "limit must be from 1 to 500, got 0"),
        ("results?limit=501", "limit must be from 1 to 500, got 501"),
        ("results?since=yesterday", "since: invalid time 'yesterday'"),
        ("results?until=2024-13-45", "until: invalid time '2024-13-45'"),
        ("results?since=-5", "since: Unix seconds must be a finite number >= 0"),
        ("results?since=2h&until=3h", "since must be before until"),
        ("results?cursor=not-a-cursor", "invalid cursor: not a cursor of this store"),
        ("results?trace_id=xyz", "trace id must be 32 hex characters, got 'xyz'"),
        ("results?outcomes=fail", "unknown parameter 'outcomes' (known: evaluator, service"),
        ("results?outcome=fail&outcome=pass", "parameter 'outcome' given more than once"),
        ("breakdown?by=region", "by must be one of service, agent, model, tool, variant, got 'region'"),
        ("results?variant=1.5&variant=1.4", "parameter 'variant' given more than once"),
        ("breakdown?by=tool&since=soon", "since: invalid time 'soon'"),
        ("breakdown?outcome=fail", "unknown parameter 'outcome'"),
        ("evaluators?service=x", "unknown parameter 'service'"),
    ],
)
def test_bad_parameters_are_400_with_a_message(reader: FakeReader, query: str, message: str) -> None:
    with api(reader) as base:
        status, headers, body = get(f"{base}/api/v1/{query}")
    assert status == 400
    assert headers["Content-Type"].startswith("application/json")
    assert message in body["error"], body


def test_without_a_reader_or_with_a_failing_store_the_answer_is_503_json() -> None:
    failing = FakeReader(fail_with=sqlite3.OperationalError("database disk image is malformed"))
    with api(None) as base:
        for path in ("results", f"traces/{TRACE}", "breakdown?by=agent"):
            status, _, body = get(f"{base}/api/v1/{path}")
            assert status == 503, path
            assert body == {"error": "review unavailable: the result store is disabled (store.enabled: false)"}
        assert get(f"{base}/api/v1/evaluators")[0] == 200  # in-process figures need no store
        assert get(f"{base}/api/v1/results?outcome=never")[0] == 400  # parameters are checked first
    with api(failing) as base:
        for path in ("results", f"traces/{TRACE}", "breakdown?by=agent"):
            status, _, body = get(f"{base}/api/v1/{path}")
            assert status == 503, path
            assert body == {"error": "review unavailable: OperationalError: database disk image is malformed"}
    with api(None, unavailable="this build has no SQLite review reader") as base:
        assert get(f"{base}/api/v1/results")[2] == {
            "error": "review unavailable: this build has no SQLite review reader"
        }


def test_unknown_paths_and_methods_under_api_v1_are_json(reader: FakeReader) -> None:
    import urllib.request

    with api(reader) as base:
        for path in ("/api/v1/nothing", "/api/v1/", "/api/v1/traces/"):
            status, headers, body = get(base + path)
            assert headers["Content-Type"].startswith("application/json")
            assert status == 404, path
            assert "openapi.json" in body["error"]
        status, _, body = get(base + "/elsewhere")
        assert status == 404 and isinstance(body, str)  # outside /api/v1 the answer stays text
        request = urllib.request.Request(f"{base}/api/v1/results", data=b"{}", method="POST")
        try:
            urllib.request.urlopen(request, timeout=10)
            raise AssertionError("POST was accepted")
        except urllib.error.HTTPError as exc:
            assert exc.code == 405
            assert "GET only" in exc.read().decode()


def test_auth_on_bearer_or_session_cookie_and_off(reader: FakeReader) -> None:
    paths = ("/api/v1/results", f"/api/v1/traces/{TRACE}", "/api/v1/breakdown", "/api/v1/evaluators")
    with api(reader, token=TOKEN) as base:
        for path in (*paths, "/api/v1/nothing"):
            status, headers, body = get(base + path)
            assert status == 401, path
            assert body == {"error": "missing or invalid bearer token"}
            assert headers["WWW-Authenticate"].startswith("Bearer")
            assert get(base + path, {"Authorization": "Bearer wrong"})[0] == 401
            assert get(base + path, {"Cookie": f"{SESSION_COOKIE}={session_value('wrong')}"})[0] == 401
        for path in paths:
            assert get(base + path, {"Authorization": f"Bearer {TOKEN}"})[0] == 200, path
            assert get(base + path, {"Cookie": f"{SESSION_COOKIE}={session_value(TOKEN)}"})[0] == 200, path
        assert get(base + "/api/v1/openapi.json")[0] == 200  # open: no trace content
        assert get(base + "/api/failing")[0] == 401
    with api(reader) as base:
        for path in paths:
            assert get(base + path)[0] == 200, path
