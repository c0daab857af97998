"""The review pages over HTTP: filters reach the reader, pagination, trace and breakdown pages, 400/404/503
pages, and the security headers on every /review answer."""

from __future__ import annotations

import re
import sqlite3
from html import unescape
from urllib.parse import parse_qs, urlsplit

import pytest

from monitor.auth import SESSION_COOKIE, session_value
from monitor.config.review import ReviewConfig
from monitor.web.pages.layout import CSP
from tests.monitor.web.pages.conftest import TOKEN, Site, Source
from tests.monitor.web.pages.sample import FAILING_TRACE, PASSING_TRACE, evaluator_infos, sample_traces
from tests.support.fake_reader import FakeReader
from tests.support.metrics_port import Answer, fetch, review_app, serve

COOKIE = {"Cookie": f"{SESSION_COOKIE}={session_value(TOKEN)}"}
HTML = {"Accept": "text/html,application/xhtml+xml"}


def get(site: Site, path: str) -> Answer:
    return fetch(site.base, path, COOKIE)


def rows(body: str, table: str = "results") -> list[str]:
    match = re.search(rf'<table class="{table}">.*?<tbody>(.*?)</tbody>', body, re.S)
    return re.findall(r"<tr[ >].*?</tr>", match[1], re.S) if match else []


def hrefs(body: str) -> list[str]:
    return [unescape(h) for h in re.findall(r'href="([^"]*)"', body)]


def assert_secure_headers(answer: Answer, cache: str | None = "no-store") -> None:
    assert answer.headers["Content-Security-Policy"] == CSP
    assert answer.headers["X-Content-Type-Options"] == "nosniff"
    assert answer.headers["Referrer-Policy"] == "no-referrer"
    if cache:
        assert answer.headers["Cache-Control"] == cache


def test_every_review_answer_has_the_security_headers(review_site: Site) -> None:
    paths = ["/review", f"/review/traces/{FAILING_TRACE}", "/review/breakdown", "/review/nope", "/review/traces/xyz"]
    for path in paths:
        assert_secure_headers(get(review_site, path))
    assert_secure_headers(fetch(review_site.base, "/review"))  # the middleware's 401 too
    assert_secure_headers(fetch(review_site.base, "/review", HTML))  # and its redirect
    assert_secure_headers(fetch(review_site.base, "/review/login"))
    css = fetch(review_site.base, "/review/static/review.css")  # open: no trace content
    assert css.status == 200 and css.headers["Content-Type"].startswith("text/css")
    assert ".badge.fail" in css.body
    assert_secure_headers(css, cache=None)
    assert "no-store" not in css.headers.get("Cache-Control", "")
    assert "Content-Security-Policy" not in fetch(review_site.base, "/healthz").headers


def test_default_view_lists_recent_failures_newest_first(review_site: Site) -> None:
    answer = get(review_site, "/review/results")
    assert answer.status == 200 and answer.headers["Content-Type"].startswith("text/html")
    found = rows(answer.body)
    assert found and all('class="row-fail"' in row for row in found)
    times = re.findall(r'<td class="nowrap">([^<]+)</td>', answer.body)
    assert times == sorted(times, reverse=True)
    assert len(found) == 20  # review.page_size of the test app
    assert f"/review/traces/{FAILING_TRACE}" in answer.body
    assert "&lt;script&gt;" in answer.body and "<script>" not in answer.body


def test_query_parameters_prefilter_like_an_alert_link(review_site: Site, review_source: Source) -> None:
    answer = get(review_site, "/review/results?evaluator=tool_success_rate&since=1h")
    found = rows(answer.body)
    assert len(found) == 1 and "tool_success_rate" in found[0] and review_site.facts.explanation in unescape(found[0])
    assert '<option value="tool_success_rate" selected>' in answer.body
    assert 'name="since" id="f-since" value="1h"' in answer.body
    assert "alert-firing" in answer.body  # the evaluator's line: its alert state from the daemon
    where = review_source.reader.calls[-1][1][0]  # type: ignore[attr-defined]
    assert where.evaluator == "tool_success_rate" and where.outcome == "fail" and where.since is not None


def test_outcome_any_and_the_other_filters(review_site: Site) -> None:
    every = rows(get(review_site, "/review/results?outcome=any&service=checkout&agent=order_assistant&since=1h").body)
    assert {re.search(r'class="row-(\w+)"', r)[1] for r in every} == {"fail", "pass", "skip"}  # type: ignore[index]
    assert rows(get(review_site, "/review/results?outcome=pass&service=search").body)
    assert not rows(get(review_site, "/review/results?model=no-such-model").body)
    assert "No results match" in get(review_site, "/review/results?model=no-such-model").body


def test_older_link_pages_through_with_the_same_filters(review_site: Site) -> None:
    first = get(review_site, "/review/results?evaluator=latency&limit=25")
    older = [h for h in hrefs(first.body) if "cursor=" in h]
    assert len(older) == 1 and "older →" in first.body
    query = parse_qs(urlsplit(older[0]).query)
    assert query["evaluator"] == ["latency"] and query["outcome"] == ["fail"] and query["limit"] == ["25"]
    second = get(review_site, older[0])
    assert len(rows(first.body)) == 25 and len(rows(second.body)) == 25
    assert not set(rows(first.body)) & set(rows(second.body))
    third = get(review_site, next(h for h in hrefs(second.body) if "cursor=" in h))
    assert len(rows(third.body)) == 10 and "older →" not in third.body and "← newest" in third.body


@pytest.mark.parametrize(
    ("query", "problem"),
    [
        ("cursor=forged", "cursor"),
        ("since=yesterday", "since"),
        ("since=1h&until=2h", "since must be before until"),
        ("outcome=maybe", "outcome"),
        ("limit=-3", "limit"),
        ("evaluator=" + "x" * 300, "evaluator"),
    ],
)
def test_malformed_parameters_are_a_400_page(review_site: Site, query: str, problem: str) -> None:
    answer = get(review_site, f"/review/results?{query}")
    assert answer.status == 400 and problem in unescape(answer.body) and "Traceback" not in answer.body


def test_trace_page_shows_summary_steps_verdicts_and_trace_ui_link(review_site: Site) -> None:
    answer = get(review_site, f"/review/traces/{FAILING_TRACE.upper()}")
    assert answer.status == 200
    body = unescape(answer.body)
    assert f'href="http://localhost:16686/trace/{FAILING_TRACE}"' in answer.body and "open in trace UI" in body
    steps = rows(answer.body, "steps")
    assert [unescape(re.search(r"</span> ([^<]*)</td>", s)[1]) for s in steps] == list(review_site.facts.step_names)  # type: ignore[index]
    assert [re.search(r'class="step (d\d+)"', s)[1] for s in steps] == ["d0", "d1", "d2", "d1"]  # type: ignore[index]
    error_rows = [s for s in steps if 'class="step-error"' in s]
    assert (
        len(error_rows) == 1 and review_site.facts.error_step in error_rows[0] and "timeout after 30s" in error_rows[0]
    )
    assert "412 → 38 tok" in body and "gemini-2.5-flash" in body and "31.9 s" in body
    verdicts = rows(answer.body, "verdicts")
    outcomes = [re.search(r'class="row-(\w+)"', v)[1] for v in verdicts]  # type: ignore[index]
    assert outcomes == ["fail", "fail", "skip", "pass"]  # failing first
    assert review_site.facts.explanation in body and "no_output_text" in body
    assert "&lt;script&gt;document.title" in answer.body and "<script" not in answer.body


@pytest.mark.integration
def test_no_trace_ui_link_without_a_template() -> None:
    app = review_app(FakeReader.of(sample_traces()), None, review=ReviewConfig())
    with serve(app) as base:
        answer = fetch(base, f"/review/traces/{PASSING_TRACE}")
    assert answer.status == 200 and "open in trace UI" not in answer.body


def test_trace_url_template_gets_the_id_url_encoded() -> None:
    config = ReviewConfig(trace_url_template="https://grafana.example/explore?left=%7B%22query%22:%22{trace_id}%22%7D")
    assert config.trace_url("a/b c") == "https://grafana.example/explore?left=%7B%22query%22:%22a%2Fb%20c%22%7D"


def test_unknown_and_malformed_trace_ids(review_site: Site) -> None:
    unknown = get(review_site, "/review/traces/" + "ab" * 16)
    assert unknown.status == 404 and "trace not found" in unknown.body and "store.retention" in unknown.body
    for bad in ("xyz", "ab" * 17, "g" * 32, "%3Cscript%3E"):
        answer = get(review_site, f"/review/traces/{bad}")
        assert answer.status == 400 and "32 hexadecimal digits" in answer.body, bad
    assert get(review_site, "/review/elsewhere").status == 404


def test_breakdown_rows_link_to_filtered_results(review_site: Site) -> None:
    answer = get(review_site, "/review/breakdown?evaluator=latency&by=service&since=7d")
    assert answer.status == 200
    found = rows(answer.body, "breakdown")
    assert [re.search(r">(\w+)</a>", r)[1] for r in found] == ["checkout", "search"]  # type: ignore[index]  # most failures first
    links = [h for h in hrefs(answer.body) if "service=" in h and h.startswith("/review/results?")]
    assert parse_qs(urlsplit(links[0]).query) == {
        "evaluator": ["latency"], "service": ["checkout"], "outcome": ["fail"], "since": ["7d"],
    }  # fmt: skip
    assert re.search(r'class="fill w\d+"', answer.body)
    assert len(rows(get(review_site, links[0]).body)) == 20  # it lands on those results
    tools = get(review_site, "/review/breakdown?by=tool")
    assert "lookup_order" in tools.body and "cannot filter by tool" in tools.body
    assert get(review_site, "/review/breakdown?by=colour").status == 400


@pytest.mark.integration
def test_without_a_reader_every_data_page_says_review_unavailable() -> None:
    with serve(review_app(None, None)) as base:
        for path in ("/review", f"/review/traces/{FAILING_TRACE}", "/review/breakdown"):
            answer = fetch(base, path)
            assert answer.status == 503 and "review unavailable" in answer.body and "store.enabled" in answer.body
            assert_secure_headers(answer)


@pytest.mark.integration
@pytest.mark.parametrize(
    "error", [sqlite3.DatabaseError("database disk image is malformed"), ValueError("no such column: tool")]
)
def test_a_failing_store_is_a_503_page_with_the_reason_never_a_traceback(error: Exception) -> None:
    with serve(review_app(FakeReader(fail_with=error), None, evaluator_infos)) as base:
        for path in ("/review", f"/review/traces/{FAILING_TRACE}", "/review/breakdown"):
            answer = fetch(base, path)
            assert answer.status == 503 and str(error) in answer.body, path
            assert "Traceback" not in answer.body


@pytest.mark.integration
def test_evaluator_names_alone_and_a_failing_evaluator_list() -> None:
    reader = FakeReader.of(sample_traces())
    with serve(review_app(reader, None, ["error_free", "latency"])) as base:
        body = fetch(base, "/review/results?evaluator=latency").body
        assert '<option value="latency" selected>' in body and '<option value="error_free">' in body

    def broken() -> list:
        raise RuntimeError("window lock")

    with serve(review_app(reader, None, broken)) as base:
        assert fetch(base, "/review").status == 200


def test_trailing_slash_redirects_keeping_the_query(review_site: Site) -> None:
    answer = get(review_site, "/review/?evaluator=latency")
    assert answer.status == 308 and answer.location == "/review?evaluator=latency"
