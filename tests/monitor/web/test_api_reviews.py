"""Reviewers' verdicts on the review API, over a real SQLite store on a real server on 127.0.0.1 (and a real
PostgreSQL for the conflict): POST /api/v1/reviews answers 201 with the stored review, 400 for a bad body, 401
without the bearer token (a session cookie is not enough), 403 with no token configured, 404 for a result the store
does not hold, 409 when someone else reviews the same result at the same moment, 413 past the body bound and 503
without a store; GET lists the reviews in force and one result's audit trail; a trace's verdicts carry the review
in force; each review written is counted in agent_eval_reviews_total."""

from __future__ import annotations

import http.client
import threading
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from monitor.auth import SESSION_COOKIE, session_value
from monitor.review.review_params import MAX_BODY_BYTES
from monitor.store.postgres.store import PostgresResultStore
from monitor.store.sqlite import ResultStore
from tests.support.reviews_app import BEARER, OTHER, TOKEN, TRACE, fill, review_body, reviews_port, send

WAIT = 10.0  # seconds a bounded poll waits
NAN_SCORE = (
    b'{"trace_id": "%s", "evaluator": "faithful", "agreement": "disagree", "reviewer": "ann", "corrected_score": NaN}'
    % TRACE.encode()
)
LOCKED = "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO reviews%'"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[ResultStore]:
    store = ResultStore(tmp_path / "results.db", results="all")
    fill(store)
    yield store
    store.close()


@pytest.mark.integration
def test_a_review_is_stored_listed_shown_on_its_trace_and_counted(store: ResultStore) -> None:
    with reviews_port(store) as port:
        body = review_body(corrected_score=1.0, corrected_label="faithful", note="the refund is in the trace")
        status, _, written = send(port.url("/reviews"), "POST", body, BEARER)
        assert status == 201, written
        assert written["trace_id"] == TRACE and written["evaluator"] == "faithful" and written["level"] == "trace"
        assert (written["verdict"], written["agreement"], written["false_alarm"], written["miss"]) == (
            "fail", "disagree", True, False,
        )  # fmt: skip
        assert (written["reviewer"], written["corrected_score"], written["note"]) == ("ann", 1.0, body["note"])
        assert written["superseded_at"] is None and written["service"] == "svc"

        status, _, page = send(port.url("/reviews"), headers=BEARER)
        assert status == 200 and [r["review_id"] for r in page["items"]] == [written["review_id"]]

        status, _, trace = send(port.url(f"/traces/{TRACE}"), headers=BEARER)
        assert status == 200
        reviews = {r["evaluator"]: r["review"] for r in trace["results"]}
        assert reviews["polite"] is None and reviews["json_valid"] is None
        assert reviews["faithful"] == {
            "agreement": "disagree",
            "reviewer": "ann",
            "corrected_score": 1.0,
            "corrected_label": "faithful",
            "note": "the refund is in the trace",
            "created_at": written["created_at"],
        }
        assert port.count("faithful", "fail", "disagree") == 1.0
        status, _, page = send(port.url("/results?outcome=fail"), headers=BEARER)  # the list carries it too
        assert status == 200
        assert {(r["trace_id"], r["review"]["reviewer"] if r["review"] else None) for r in page["items"]} == {
            (TRACE, "ann"),
            (OTHER, None),
        }

        # a passing llm-level verdict on a span, reviewed: a miss; and the failing one reviewed again
        miss = review_body(evaluator="json_valid", level="llm", span_id="s2", reviewer="bob")
        assert send(port.url("/reviews"), "POST", miss, BEARER)[2]["miss"] is True
        changed = review_body(agreement="agree", reviewer="bob")
        status, _, second = send(port.url("/reviews"), "POST", changed, BEARER)
        assert status == 201 and second["agreement"] == "agree"
        assert port.count("faithful", "fail", "agree") == 1.0 and port.count("json_valid", "pass", "disagree") == 1.0
        assert port.count("faithful", "fail", "disagree") == 1.0  # the first review still counted once

        query = urllib.parse.urlencode({"trace_id": TRACE, "evaluator": "faithful"})
        status, _, trail = send(port.url(f"/reviews/history?{query}"), headers=BEARER)
        assert status == 200 and (trail["trace_id"], trail["level"], trail["span_id"]) == (TRACE, "trace", "")
        assert [(r["reviewer"], r["agreement"]) for r in trail["items"]] == [("bob", "agree"), ("ann", "disagree")]
        assert trail["items"][1]["superseded_at"] == second["created_at"]
        status, _, trace = send(port.url(f"/traces/{TRACE}"), headers=BEARER)
        assert {r["evaluator"]: r["review"] for r in trace["results"]}["faithful"]["agreement"] == "agree"
        assert len(send(port.url("/reviews"), headers=BEARER)[2]["items"]) == 2  # one in force per result


@pytest.mark.integration
def test_the_list_filters_newest_first_and_refuses_bad_parameters(store: ResultStore) -> None:
    with reviews_port(store) as port:
        posts = [
            review_body(reviewer="ann"),
            review_body(OTHER, reviewer="bob", agreement="agree"),
            review_body(evaluator="polite", reviewer="ann", agreement="agree"),
        ]
        stamps = []
        for body in posts:
            status, _, written = send(port.url("/reviews"), "POST", body, BEARER)
            assert status == 201, written
            stamps.append(written["created_at"])

        def listed(**params: str) -> list[tuple[str, str]]:
            status, _, page = send(port.url("/reviews?" + urllib.parse.urlencode(params)), headers=BEARER)
            assert status == 200, page
            return [(r["trace_id"][:2], r["evaluator"]) for r in page["items"]]

        assert listed() == [("ab", "polite"), ("cd", "faithful"), ("ab", "faithful")]  # newest first
        assert listed(limit="2") == [("ab", "polite"), ("cd", "faithful")]
        assert listed(evaluator="faithful") == [("cd", "faithful"), ("ab", "faithful")]
        assert listed(trace_id=OTHER.upper()) == [("cd", "faithful")]
        assert listed(reviewer="ann") == [("ab", "polite"), ("ab", "faithful")]
        assert listed(agreement="disagree") == [("ab", "faithful")]
        assert listed(since=repr(stamps[2])) == [("ab", "polite")]
        assert listed(since="1h", reviewer="bob") == [("cd", "faithful")]
        for bad in ("agreement=maybe", "limit=0", "limit=501", "since=yesterday", "trace_id=xyz", "colour=red",
                    "reviewer=a&reviewer=b"):  # fmt: skip
            status, _, error = send(port.url(f"/reviews?{bad}"), headers=BEARER)
            assert status == 400 and error["error"], bad
        for bad in ("evaluator=faithful", f"trace_id={TRACE}", f"trace_id={TRACE}&evaluator=x&colour=red"):
            status, _, error = send(port.url(f"/reviews/history?{bad}"), headers=BEARER)
            assert status == 400 and error["error"], bad
        never = urllib.parse.urlencode({"trace_id": TRACE, "evaluator": "json_valid", "level": "llm", "span_id": "s2"})
        assert send(port.url(f"/reviews/history?{never}"), headers=BEARER)[2]["items"] == []


@pytest.mark.integration
@pytest.mark.parametrize(
    ("raw", "named"),
    [
        (b"not json", "JSON"),
        (b"[1, 2]", "JSON object"),
        (b'{"trace_id": "' + TRACE.encode() + b'", "evaluator": "faithful", "agreement": "disagree"}', "reviewer"),
        (None, "reviewer"),  # blank
        (None, "agreement"),
        (None, "trace_id"),
        (None, "colour"),
        (None, "corrected_score"),
        (None, "note"),
        (NAN_SCORE, "corrected_score"),
    ],
)
def test_a_bad_body_is_400_naming_the_field_and_nothing_is_written(
    store: ResultStore, raw: bytes | None, named: str
) -> None:
    bodies = {
        "reviewer": review_body(reviewer="   "),
        "agreement": review_body(agreement="maybe"),
        "trace_id": review_body("not-a-trace"),
        "colour": review_body(colour="red"),
        "corrected_score": review_body(corrected_score="high"),
        "note": review_body(note="x" * 2001),
    }
    with reviews_port(store) as port:
        status, _, error = send(port.url("/reviews"), "POST", bodies.get(named), BEARER, raw=raw)
        assert status == 400, error
        assert named in error["error"]
        assert send(port.url("/reviews"), headers=BEARER)[2]["items"] == []
        assert port.count("faithful", "fail", "disagree") == 0.0


@pytest.mark.integration
def test_a_body_past_the_bound_is_413_with_or_without_a_length(store: ResultStore) -> None:
    with reviews_port(store) as port:
        big = b'{"note": "' + b"x" * MAX_BODY_BYTES + b'"}'
        status, _, error = send(port.url("/reviews"), "POST", headers=BEARER, raw=big)
        assert status == 413 and str(MAX_BODY_BYTES) in error["error"]
        host, port_number = urllib.parse.urlsplit(port.base).netloc.split(":")
        connection = http.client.HTTPConnection(host, int(port_number), timeout=10)
        try:
            connection.putrequest("POST", "/api/v1/reviews")
            for name, value in {**BEARER, "Content-Type": "application/json", "Transfer-Encoding": "chunked"}.items():
                connection.putheader(name, value)
            connection.endheaders()
            chunk = b"x" * 4096
            for _ in range(MAX_BODY_BYTES // len(chunk) + 2):
                connection.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            connection.send(b"0\r\n\r\n")
            assert connection.getresponse().status == 413
        finally:
            connection.close()
        assert send(port.url("/reviews"), headers=BEARER)[2]["items"] == []


@pytest.mark.integration
def test_writing_needs_the_bearer_token_itself(store: ResultStore) -> None:
    """No token, a wrong one, or only the review page's session cookie: 401, nothing written; reads with the
    session cookie still work."""
    with reviews_port(store) as port:
        status, headers, error = send(port.url("/reviews"), "POST", review_body())
        assert status == 401 and headers["WWW-Authenticate"].startswith("Bearer") and error["error"]
        status, _, _ = send(port.url("/reviews"), "POST", review_body(), {"Authorization": "Bearer wrong"})
        assert status == 401
        cookie = {"Cookie": f"{SESSION_COOKIE}={session_value(TOKEN)}"}
        status, _, error = send(port.url("/reviews"), "POST", review_body(), cookie)
        assert status == 401 and "Bearer" in error["error"]
        assert send(port.url("/reviews"), headers=cookie)[:1] == (200,)  # the session reads
        assert send(port.url("/reviews"), headers=BEARER)[2]["items"] == []
        assert port.count("faithful", "fail", "disagree") == 0.0


@pytest.mark.integration
@pytest.mark.parametrize("mode", ["loopback", "any"])
def test_with_no_token_configured_loopback_reads_but_nothing_is_reviewed(store: ResultStore, mode: str) -> None:
    with reviews_port(store, token=None, mode=mode) as port:  # type: ignore[arg-type]
        for headers in ({}, {"Authorization": "Bearer anything"}):
            status, _, error = send(port.url("/reviews"), "POST", review_body(), headers)
            assert status == 403 and "api.auth.bearer_token_file" in error["error"]
        status, _, page = send(port.url("/reviews"))
        assert status == 200 and page["items"] == []
        assert send(port.url(f"/traces/{TRACE}"))[0] == 200


@pytest.mark.integration
def test_a_result_the_store_does_not_hold_is_404(store: ResultStore) -> None:
    with reviews_port(store) as port:
        for body in (
            review_body("ef" * 16),  # unknown trace
            review_body(evaluator="unknown"),
            review_body(level="llm"),  # faithful has no llm-level result
            review_body(evaluator="json_valid", level="llm", span_id="s9"),
        ):
            status, _, error = send(port.url("/reviews"), "POST", body, BEARER)
            assert status == 404 and "no stored result" in error["error"], body


@pytest.mark.integration
def test_without_a_store_every_review_call_is_503() -> None:
    with reviews_port(None) as port:
        status, _, error = send(port.url("/reviews"), "POST", review_body(), BEARER)
        assert status == 503 and error["error"].startswith("review unavailable")
        assert send(port.url("/reviews"), headers=BEARER)[0] == 503
        history = urllib.parse.urlencode({"trace_id": TRACE, "evaluator": "faithful"})
        assert send(port.url(f"/reviews/history?{history}"), headers=BEARER)[0] == 503


@pytest.mark.integration
def test_other_methods_are_405_naming_the_allowed_ones(store: ResultStore) -> None:
    with reviews_port(store) as port:
        status, headers, error = send(port.url("/reviews"), "DELETE", headers=BEARER)
        assert status == 405 and "GET or POST" in error["error"] and "POST" in headers["Allow"]


def test_two_reviews_of_one_result_at_the_same_moment_one_is_409(postgres_url: str) -> None:
    """Another replica's review of the same result, not yet committed when this one is written: this one waits on
    the in-force index, then is refused (409, to be sent again); nothing half-written stays."""
    store = PostgresResultStore(postgres_url, results="all")
    fill(store)
    try:
        with reviews_port(store) as port, psycopg.connect(postgres_url) as other:
            columns = ("review_id", "trace_id", "evaluator", "level", "span_id", "agreement", "reviewer", "created_at")
            other.execute(
                f"INSERT INTO reviews ({', '.join(columns)}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                ("r-other", TRACE, "faithful", "trace", "", "agree", "carol", time.time()),
            )  # held open: uncommitted
            answer: list[tuple[int, object]] = []
            posting = threading.Thread(
                target=lambda: answer.append(send(port.url("/reviews"), "POST", review_body(), BEARER)[::2])
            )
            posting.start()
            with psycopg.connect(postgres_url, autocommit=True) as watcher:
                deadline = time.monotonic() + WAIT
                while time.monotonic() < deadline and not watcher.execute(LOCKED).fetchone()[0]:
                    time.sleep(0.02)
            other.commit()
            posting.join(WAIT)
        assert answer and answer[0][0] == 409, answer
        assert "send it again" in answer[0][1]["error"]  # type: ignore[index]
        in_force = store.transaction(
            lambda db: db.execute("SELECT reviewer FROM reviews WHERE superseded_at IS NULL").fetchall()
        )
        assert [r[0] for r in in_force] == ["carol"]
    finally:
        store.close()


@pytest.mark.integration
def test_the_answers_conform_to_the_openapi_document(store: ResultStore) -> None:
    from monitor.web.openapi import PREFIX, openapi_document
    from tests.monitor.web.test_openapi import conforms

    document = openapi_document()
    paths = document["paths"]

    def schema(path: str, method: str, status: str) -> dict:
        return paths[PREFIX + path][method]["responses"][status]["content"]["application/json"]["schema"]

    with reviews_port(store) as port:
        status, _, written = send(port.url("/reviews"), "POST", review_body(), BEARER)
        assert status == 201 and conforms(document, schema("/reviews", "post", "201"), written) == []
        body_schema = paths[PREFIX + "/reviews"]["post"]["requestBody"]["content"]["application/json"]["schema"]
        assert conforms(document, body_schema, review_body(span_id="s2", note="n")) == []
        status, _, error = send(port.url("/reviews"), "POST", review_body(agreement="?"), BEARER)
        assert status == 400 and conforms(document, schema("/reviews", "post", "400"), error) == []
        listed = send(port.url("/reviews"), headers=BEARER)[2]
        assert conforms(document, schema("/reviews", "get", "200"), listed) == []
        query = urllib.parse.urlencode({"trace_id": TRACE, "evaluator": "faithful"})
        trail = send(port.url(f"/reviews/history?{query}"), headers=BEARER)[2]
        assert conforms(document, schema("/reviews/history", "get", "200"), trail) == [] and trail["items"]
        trace = send(port.url(f"/traces/{TRACE}"), headers=BEARER)[2]
        assert conforms(document, schema("/traces/{trace_id}", "get", "200"), trace) == []
