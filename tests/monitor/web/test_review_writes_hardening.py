"""Issue 38, items 3 and 4, through the real review API on 127.0.0.1 over a real SQLite file and a real PostgreSQL:

- a review whose texts carry a NUL character (PostgreSQL refuses it) is stored with U+FFFD in its place, as a
  result's text is; `agent_monitor_review_available` stays 1 and the log never claims that results are not stored;
  a review the database fails on answers 503 and marks only the `review` operation failing, until the next review
  written (the gauge back to 1);
- the call docs/reviews.md shows (no `span_id`) finds a trace-level verdict, which carries the root span's id, and
  the review shows next to that verdict; naming the root span's id explicitly works too.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from monitor.store.postgres.store import PostgresResultStore
from monitor.store.sqlite import ResultStore
from monitor.store.writer import QueuedResultStore
from tests.support.reviews_app import BEARER, TRACE, Port, fill, review_body, reviews_port, send
from tests.support.store_builders import outcome, row

pytestmark = pytest.mark.integration  # each test starts a process or a server

DOCS = Path(__file__).resolve().parents[3] / "docs" / "reviews.md"
ROOT_SPAN = "00f067aa0ba902b7"
NOT_STORED = "results are not stored"


def documented_review() -> dict[str, Any]:
    """The JSON body of the `curl -X POST .../api/v1/reviews` call docs/reviews.md shows."""
    text = DOCS.read_text(encoding="utf-8")
    call = re.search(r"curl -sS -X POST \S+/api/v1/reviews.*?-d '(\{.*?\})'", text, re.S)
    assert call is not None, "docs/reviews.md shows no POST /api/v1/reviews call"
    return json.loads(call.group(1))


@pytest.fixture(params=["sqlite", "postgres"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], QueuedResultStore]]:
    """A factory of a real result store (SQLite file, or a fresh database on the session's PostgreSQL)."""
    made: list[QueuedResultStore] = []

    def make() -> QueuedResultStore:
        if request.param == "sqlite":
            store: QueuedResultStore = ResultStore(tmp_path / "results.db", results="all")
        else:
            store = PostgresResultStore(request.getfixturevalue("postgres_url"), results="all")
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()


def available(port: Port) -> float | None:
    return port.metrics.registry.get_sample_value("agent_monitor_review_available")


def test_a_nul_in_a_review_is_stored_cleaned_and_the_store_stays_available(
    make_store: Callable[[], QueuedResultStore], caplog: pytest.LogCaptureFixture
) -> None:
    store = make_store()
    fill(store)
    caplog.set_level(logging.WARNING)
    with reviews_port(store) as port:
        port.metrics.store.observe(store.health)
        assert available(port) == 1.0
        body = review_body(reviewer="a\u0000b", note="see\u0000here", corrected_label="x\u0000")
        status, _, written = send(port.url("/reviews"), "POST", body, BEARER)
        assert status == 201, written
        assert (written["reviewer"], written["note"], written["corrected_label"]) == ("a\ufffdb", "see\ufffdhere",
                                                                                        "x\ufffd")  # fmt: skip
        status, _, trace = send(port.url(f"/traces/{TRACE}"), headers=BEARER)
        assert status == 200
        shown = {r["evaluator"]: r["review"] for r in trace["results"]}["faithful"]
        assert shown is not None and shown["reviewer"] == "a\ufffdb"
        # the history, asked with the NUL too, finds it
        status, _, past = send(port.url(f"/reviews/history?trace_id={TRACE}&evaluator=faith%00ful"), headers=BEARER)
        assert status == 200, past
        assert available(port) == 1.0 and store.health.available
    assert not [r.getMessage() for r in caplog.records if NOT_STORED in r.getMessage()]


def test_a_failed_review_write_recovers_at_the_next_review(
    make_store: Callable[[], QueuedResultStore], caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = make_store()
    fill(store)
    caplog.set_level(logging.WARNING)
    real = store.transaction
    failures = [store.DATABASE_ERRORS[0]("the database went away")]

    def once_failing(work: Callable[[Any], Any]) -> Any:
        if failures:
            raise failures.pop()
        return real(work)

    monkeypatch.setattr(store, "transaction", once_failing)
    with reviews_port(store) as port:
        port.metrics.store.observe(store.health)
        status, _, answer = send(port.url("/reviews"), "POST", review_body(), BEARER)
        assert status == 503, answer
        assert available(port) == 0.0 and set(store.health.failing()) == {"review"}
        status, _, written = send(port.url("/reviews"), "POST", review_body(reviewer="bob"), BEARER)
        assert status == 201, written
        assert available(port) == 1.0
    lines = [r.getMessage() for r in caplog.records if "result store unavailable" in r.getMessage()]
    assert lines and all(NOT_STORED not in line and "reviews are not stored" in line for line in lines)


def test_a_row_the_database_refuses_is_that_reviews_400_not_the_stores_health(
    make_store: Callable[[], QueuedResultStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = make_store()
    fill(store)
    refused = next(e for e in store.ROW_ERRORS if e.__name__ == "DataError")  # sqlite3's or psycopg's

    def refusing(work: Callable[[Any], Any]) -> Any:
        raise refused("a value the database refuses")

    monkeypatch.setattr(store, "transaction", refusing)
    with reviews_port(store) as port:
        port.metrics.store.observe(store.health)
        status, _, answer = send(port.url("/reviews"), "POST", review_body(), BEARER)
        assert status == 400, answer
        assert "refuses this review" in answer["error"]
        assert available(port) == 1.0 and store.health.available


def test_the_documented_call_reviews_a_trace_level_verdict_on_its_root_span(
    make_store: Callable[[], QueuedResultStore],
) -> None:
    body = documented_review()
    assert "span_id" not in body and body.get("level", "trace") == "trace"
    store = make_store()
    trace_id = body["trace_id"]
    store.write([outcome(trace_id, row(body["evaluator"], False, span_id=ROOT_SPAN))])
    with reviews_port(store) as port:
        status, _, written = send(port.url("/reviews"), "POST", body, BEARER)
        assert status == 201, written
        assert (written["trace_id"], written["span_id"], written["verdict"]) == (trace_id, ROOT_SPAN, "fail")
        status, _, trace = send(port.url(f"/traces/{trace_id}"), headers=BEARER)
        assert status == 200
        (result,) = trace["results"]
        assert result["review"] is not None and result["review"]["reviewer"] == body["reviewer"]

        explicit = {**body, "span_id": ROOT_SPAN, "reviewer": "bob", "agreement": "agree"}
        status, _, again = send(port.url("/reviews"), "POST", explicit, BEARER)
        assert status == 201, again
        assert again["span_id"] == ROOT_SPAN

        query = f"/reviews/history?trace_id={trace_id}&evaluator={body['evaluator']}"
        status, _, past = send(port.url(query), headers=BEARER)
        assert status == 200, past
        assert [r["reviewer"] for r in past["items"]] == ["bob", body["reviewer"]]


def test_a_review_without_span_id_is_still_refused_when_several_spans_have_results(
    make_store: Callable[[], QueuedResultStore],
) -> None:
    store = make_store()
    rows = (row("tone", False, level="agent", span_id="a1"), row("tone", False, level="agent", span_id="a2"))
    store.write([outcome(TRACE, *rows)])
    with reviews_port(store) as port:
        status, _, answer = send(port.url("/reviews"), "POST", review_body(evaluator="tone", level="agent"), BEARER)
        assert status == 404, answer
        named = review_body(evaluator="tone", level="agent", span_id="a2")
        status, _, written = send(port.url("/reviews"), "POST", named, BEARER)
        assert status == 201 and written["span_id"] == "a2", written
