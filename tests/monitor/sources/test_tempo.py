"""TempoSource against a fake Tempo (search, trace by id v2; tests/monitor/sources/fake_stores.py) on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from monitor.config.sources import TempoSourceConfig
from monitor.sources.base import SourceError
from monitor.sources.http import SourceHttp
from monitor.sources.tempo import FETCH_CONCURRENCY, MAX_SEARCH_SECONDS, TempoSource
from tests.monitor.sources.fake_stores import (
    SCENARIOS,
    FakeTempo,
    clone,
    collect,
    ids,
    no_sleep,
    read_from,
    span_key,
    trace_start,
)
from tests.support.otlp_json import corpus_traces

pytestmark = pytest.mark.integration  # each test starts a process or a server

SEARCH = "/api/search"
T0 = 1_800_000_000  # s
NS = 1_000_000_000
CORPUS = corpus_traces(*SCENARIOS)
SMALL = next(iter(corpus_traces("otel_genai__tool_error").values()))  # 2 spans, 123 ms
ROOT = [s for s in SMALL if not s.parent_span_id]


def source(url: str, **settings: Any) -> TempoSource:
    values: dict[str, Any] = {"name": "tempo-test", "type": "tempo", "url": url, "timeout": 5}
    config = TempoSourceConfig(**(values | settings))
    return TempoSource(config, http=SourceHttp(config, sleep=no_sleep))


def synthetic(starts: list[int], spans: list = ROOT) -> dict[str, list]:
    """`spans` as trace i+1 (hex, leading zeros) starting at starts[i] ns."""
    return {f"{i + 1:032x}": clone(spans, f"{i + 1:032x}", start, "agent") for i, start in enumerate(starts)}


async def read(store: FakeTempo, since: float, until: float, **settings: Any) -> list[list]:
    return await read_from(store, source, since, until, **settings)


def fetched(store: FakeTempo) -> list[str]:
    return [r.path.rsplit("/", 1)[1] for r in store.requests if r.path.startswith("/api/v2/traces/")]


def test_traces_come_back_whole_and_equal_to_the_corpus_over_protobuf() -> None:
    store = FakeTempo(dict(CORPUS))
    starts = [trace_start(spans) for spans in CORPUS.values()]
    pages = asyncio.run(read(store, min(starts) / 1e9 - 60, max(starts) / 1e9 + 60))
    traces = {t.trace_id: t for page in pages for t in page}
    assert sorted(traces) == sorted(CORPUS)
    for trace_id, spans in CORPUS.items():
        assert sorted(map(span_key, traces[trace_id].spans)) == sorted(map(span_key, spans))
        assert traces[trace_id].start == trace_start(spans) / 1e9
        assert traces[trace_id].end == max(s.end_time_unix_nano for s in spans) / 1e9
    search = store.query(SEARCH)[0]
    assert search == {
        "q": "{}",
        "start": str(min(starts) // NS - 60),
        "end": str(max(starts) // NS + 61),
        "limit": "100",
    }
    assert {r.headers["Accept"] for r in store.requests if r.path != SEARCH} == {"application/protobuf"}


def test_a_json_answer_is_read_too() -> None:
    store = FakeTempo(dict(CORPUS), answer_json=True)
    [trace] = [spans for spans in CORPUS.values() if spans[0].service_name == "strands"]
    pages = asyncio.run(read(store, trace_start(trace) / 1e9 - 1, trace_start(trace) / 1e9 + 1))
    [[got]] = pages
    assert sorted(map(span_key, got.spans)) == sorted(map(span_key, trace))


def test_the_traceql_query_is_sent_and_filters() -> None:
    store = FakeTempo(dict(CORPUS))
    starts = [trace_start(spans) for spans in CORPUS.values()]
    pages = asyncio.run(
        read(store, min(starts) / 1e9 - 1, max(starts) / 1e9 + 1, query='{ resource.service.name = "vercel_ai" }')
    )
    assert [t.spans[0].service_name for t in pages[0]] == ["vercel_ai"] and len(ids(pages)) == 1
    assert store.query(SEARCH)[0]["q"] == '{ resource.service.name = "vercel_ai" }'


def test_trace_ids_without_leading_zeros_are_padded() -> None:
    trace_id = "0000000000000000" + "0123456789abcdef"
    store = FakeTempo({trace_id: clone(SMALL, trace_id, T0 * NS)})
    [[trace]] = asyncio.run(read(store, T0, T0 + 1))
    assert trace.trace_id == trace_id and {s.trace_id for s in trace.spans} == {trace_id}
    assert fetched(store) == [trace_id]


def test_whole_seconds_are_asked_and_start_times_filtered_exactly() -> None:
    low, high = T0 * NS + NS // 4, T0 * NS + 5 * NS // 2
    since, until = low / 1e9, high / 1e9  # the interface is float seconds: neighbours 1 µs away
    starts = [low, high, low - 1000, high - 1000, T0 * NS, (T0 + 3) * NS]
    store = FakeTempo(synthetic(starts, SMALL))
    pages = asyncio.run(read(store, since, until))
    assert sorted(ids(pages)) == [f"{1:032x}", f"{4:032x}"]
    assert store.query(SEARCH)[0] | {"limit": ""} == {"q": "{}", "start": str(T0), "end": str(T0 + 3), "limit": ""}
    assert sorted(fetched(store)) == [f"{1:032x}", f"{4:032x}"]  # only the traces in the window are fetched


def test_a_full_search_is_halved_and_equal_start_times_at_the_split_are_each_read_once() -> None:
    since, until = T0, T0 + 8
    middle = (T0 + 4) * NS  # the first split: [T0, T0 + 4] and [T0 + 4, T0 + 8], both ends inclusive
    starts = [middle] * 3 + [(T0 + k) * NS + NS // 2 for k in (0, 1, 2, 5, 6, 7)]
    store = FakeTempo(synthetic(starts))
    pages = asyncio.run(read(store, since, until, page_size=4))
    assert sorted(ids(pages)) == sorted(store.traces)  # none lost, none twice
    assert sorted(fetched(store)) == sorted(store.traces)  # each fetched once
    windows = [(int(q["start"]), int(q["end"])) for q in store.query(SEARCH)]
    assert windows[:2] == [(T0, T0 + 8), (T0, T0 + 4)] and (T0 + 4, T0 + 8) in windows
    assert {q["limit"] for q in store.query(SEARCH)} == {"4"} and all(len(page) < 4 for page in pages)


def test_more_traces_in_one_second_than_a_page_are_read_with_a_larger_limit() -> None:
    starts = [T0 * NS + 5 * 10**8] * 10 + [T0 * NS + k for k in range(3)]
    store = FakeTempo(synthetic(starts))
    pages = asyncio.run(read(store, T0, T0 + 1, page_size=4))
    assert sorted(ids(pages)) == sorted(store.traces)
    assert [q["limit"] for q in store.query(SEARCH)] == ["4", "16"]


def test_over_the_servers_max_limit_what_came_back_is_kept(caplog: pytest.LogCaptureFixture) -> None:
    store = FakeTempo(synthetic([T0 * NS + k for k in range(10)]), max_limit=8)
    with caplog.at_level(logging.WARNING, "monitor.sources.tempo"):
        pages = asyncio.run(read(store, T0, T0 + 1, page_size=4))
    assert len(ids(pages)) == 4 and len(set(ids(pages))) == 4
    assert [q["limit"] for q in store.query(SEARCH)] == ["4", "16"]
    assert "more may have been left out" in caplog.text


def test_a_long_range_is_searched_a_day_at_a_time() -> None:
    store = FakeTempo(synthetic([(T0 + k * 40_000) * NS for k in range(6)]))
    pages = asyncio.run(read(store, T0, T0 + 3 * MAX_SEARCH_SECONDS))
    assert sorted(ids(pages)) == sorted(store.traces)
    windows = [(int(q["start"]), int(q["end"])) for q in store.query(SEARCH)]
    assert windows == [(T0 + k * MAX_SEARCH_SECONDS, T0 + (k + 1) * MAX_SEARCH_SECONDS) for k in range(3)]


def test_every_trace_in_the_window_once_whatever_the_start_times_and_limit() -> None:
    loop = asyncio.new_event_loop()
    store = FakeTempo()
    loop.run_until_complete(store.__aenter__())
    grid = st.integers(0, 60).map(lambda k: T0 * NS + k * 250_000_000)  # 15 s on a 250 ms grid
    bound = st.integers(-4, 64).map(lambda k: T0 * NS + k * 250_000_000)

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(starts=st.lists(grid, min_size=1, max_size=30), page_size=st.integers(2, 6), bounds=st.tuples(bound, bound))
    def check(starts: list[int], page_size: int, bounds: tuple[int, int]) -> None:
        since, until = min(bounds) / 1e9, max(bounds) / 1e9 + 0.01
        store.traces, store.requests = synthetic(starts, SMALL), []
        src = source(store.url, page_size=page_size)
        pages = loop.run_until_complete(collect(src, since, until))
        loop.run_until_complete(src.close())
        expected = sorted(i for i, spans in store.traces.items() if since <= trace_start(spans) / 1e9 < until)
        assert sorted(ids(pages)) == expected and sorted(fetched(store)) == expected

    try:
        check()
    finally:
        loop.run_until_complete(store.__aexit__())
        loop.close()


def test_trace_bodies_are_fetched_a_few_at_a_time() -> None:
    store = FakeTempo(synthetic([T0 * NS + k for k in range(12)]), fetch_delay=0.02)
    pages = asyncio.run(read(store, T0, T0 + 1))
    assert len(ids(pages)) == 12 and store.most_in_flight == FETCH_CONCURRENCY


def test_a_partial_trace_is_kept_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    store = FakeTempo(synthetic([T0 * NS]), partial={f"{1:032x}"})
    with caplog.at_level(logging.WARNING, "monitor.sources.tempo"):
        pages = asyncio.run(read(store, T0, T0 + 1))
    assert ids(pages) == [f"{1:032x}"] and "partial" in caplog.text and "maximum size" in caplog.text


def test_a_trace_gone_since_the_search_is_skipped() -> None:
    store = FakeTempo(synthetic([T0 * NS, T0 * NS + 1]), gone={f"{1:032x}"})
    assert ids(asyncio.run(read(store, T0, T0 + 1))) == [f"{2:032x}"]


def test_no_traces_is_an_empty_answer() -> None:
    store = FakeTempo(synthetic([T0 * NS]))
    assert asyncio.run(read(store, T0 + 10, T0 + 20)) == []
    assert len(store.requests) == 1


def test_a_500_is_retried_once() -> None:
    store = FakeTempo(synthetic([T0 * NS]), failures=[(500, "busy")])
    assert ids(asyncio.run(read(store, T0, T0 + 1))) == [f"{1:032x}"]
    assert len(store.query(SEARCH)) == 2 and len(store.requests) == 3


def test_a_401_is_an_auth_error_naming_the_url_without_the_token() -> None:
    store = FakeTempo(synthetic([T0 * NS]), token="right-token")
    with pytest.raises(SourceError) as caught:
        asyncio.run(read(store, T0, T0 + 1, token="wrong-secret-token"))
    assert caught.value.kind == "auth" and f"{store.url}{SEARCH}" in str(caught.value)
    assert "wrong-secret-token" not in str(caught.value) and "right-token" not in str(caught.value)


def test_the_bearer_token_and_custom_headers_are_sent() -> None:
    store = FakeTempo(synthetic([T0 * NS]), token="s3cret")
    pages = asyncio.run(read(store, T0, T0 + 1, token="s3cret", headers={"X-Scope-OrgID": "tenant-1"}))
    assert ids(pages) == [f"{1:032x}"] and len(store.requests) == 2
    for request in store.requests:
        assert request.headers["Authorization"] == "Bearer s3cret" and request.headers["X-Scope-OrgID"] == "tenant-1"


@pytest.mark.parametrize(
    "body", ["{not json", "[]", '{"traces": {}}', '{"traces": [{"traceID": "xyz", "startTimeUnixNano": "1"}]}',
             '{"traces": [{"traceID": "ab", "startTimeUnixNano": "soon"}]}'],
)  # fmt: skip
def test_a_malformed_search_answer_is_a_decode_error(body: str) -> None:
    store = FakeTempo(failures=[(200, body)])
    with pytest.raises(SourceError) as caught:
        asyncio.run(read(store, T0, T0 + 1))
    assert caught.value.kind == "decode" and f"{store.url}{SEARCH}" in str(caught.value)


@pytest.mark.parametrize("body", ["\x0a\x05abc", '{"trace": {"resourceSpans": "x"}}', "{oops"])
def test_a_malformed_trace_is_a_decode_error_naming_the_request(body: str) -> None:
    store = FakeTempo(synthetic([T0 * NS]))
    search = {"traces": [{"traceID": "1", "startTimeUnixNano": str(T0 * NS)}]}
    store.failures = [(200, json.dumps(search)), (200, body)]
    with pytest.raises(SourceError) as caught:
        asyncio.run(read(store, T0, T0 + 1))
    assert caught.value.kind == "decode" and f"{store.url}/api/v2/traces/{1:032x}" in str(caught.value)
