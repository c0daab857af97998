"""JaegerSource against a fake Jaeger API v3 (tests/monitor/sources/fake_stores.py) on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from monitor.config.sources import JaegerSourceConfig
from monitor.sources.base import SourceError
from monitor.sources.http import SourceHttp
from monitor.sources.jaeger import MIN_WINDOW_NS, SLACK_NS, JaegerSource, rfc3339
from tests.monitor.sources.fake_stores import (
    SCENARIOS,
    FakeJaeger,
    clone,
    collect,
    ids,
    no_sleep,
    parse_rfc3339,
    read_from,
    span_key,
    trace_start,
)
from tests.support.otlp_json import corpus_traces

PATH = "/api/v3/traces"
T0 = 1_800_000_000 * 10**9  # ns
CORPUS = corpus_traces(*SCENARIOS)
SMALL = next(iter(corpus_traces("otel_genai__tool_error").values()))  # 2 spans, the second 70 ms after the first
ROOT = [s for s in SMALL if not s.parent_span_id]


def source(url: str, **settings: Any) -> JaegerSource:
    values: dict[str, Any] = {"name": "jaeger-test", "type": "jaeger", "url": url, "service": "agent", "timeout": 5}
    config = JaegerSourceConfig(**(values | settings))
    return JaegerSource(config, http=SourceHttp(config, sleep=no_sleep))


def synthetic(starts: list[int], spans: list = SMALL) -> dict[str, list]:
    """`spans` as trace i+1 (hex) of service "agent" starting at starts[i] ns."""
    return {f"{i + 1:032x}": clone(spans, f"{i + 1:032x}", start, "agent") for i, start in enumerate(starts)}


async def read(store: FakeJaeger, since: float, until: float, **settings: Any) -> list[list]:
    return await read_from(store, source, since, until, **settings)


def test_rfc3339_has_nanoseconds() -> None:
    assert rfc3339(1_700_000_000_123_456_789) == "2023-11-14T22:13:20.123456789Z"
    assert parse_rfc3339(rfc3339(T0 + 5)) == T0 + 5


@pytest.mark.integration
def test_traces_come_back_whole_and_equal_to_the_corpus() -> None:
    async def scenario() -> None:
        async with FakeJaeger(dict(CORPUS)) as store:
            for trace_id, spans in CORPUS.items():
                src = source(store.url, service=spans[0].service_name)
                start = min(s.start_time_unix_nano for s in spans) / 1e9
                pages = await collect(src, start - 60, start + 60)
                await src.close()
                [[trace]] = pages
                assert trace.trace_id == trace_id
                assert sorted(map(span_key, trace.spans)) == sorted(map(span_key, spans))
                assert trace.start == start and trace.end == max(s.end_time_unix_nano for s in spans) / 1e9
                query = store.requests[-1].query
                assert ("query.service_name", spans[0].service_name) in query
                assert ("query.num_traces", "100") in query
                assert all(not key.startswith("query.operation") for key, _ in query)
                lo = parse_rfc3339(dict(query)["query.start_time_min"])
                assert lo == math.floor((start - 60) * 1e9) - SLACK_NS

    asyncio.run(scenario())


@pytest.mark.integration
def test_operation_name_is_sent_and_filters() -> None:
    spans = CORPUS["15316090be5e93345e29a2adb1ceaf63"]
    root = next(s for s in spans if not s.parent_span_id)
    start = min(s.start_time_unix_nano for s in spans) / 1e9
    store = FakeJaeger(dict(CORPUS))
    pages = asyncio.run(read(store, start - 1, start + 1, service="oi_openai", operation=root.name))
    assert ids(pages) == ["15316090be5e93345e29a2adb1ceaf63"]
    assert ("query.operation_name", root.name) in store.requests[0].query
    assert (
        asyncio.run(read(FakeJaeger(dict(CORPUS)), start - 1, start + 1, service="oi_openai", operation="nope")) == []
    )


@pytest.mark.integration
def test_a_trace_at_since_is_in_one_at_until_is_out() -> None:
    since, until = T0 / 1e9, (T0 + 10**9) / 1e9
    long_before = clone(SMALL, "e" * 32, T0 - 5 * 10**9, "agent")
    long_before[-1].start_time_unix_nano = T0 + 100  # a late span inside the window: Jaeger finds the trace
    long_before[-1].end_time_unix_nano = T0 + 200
    # the interface is float seconds (a 238 ns step near 1.8e9 s): neighbours 1 µs away
    traces = synthetic([T0, T0 + 10**9, T0 - 1000, T0 + 10**9 - 1000]) | {"e" * 32: long_before}
    pages = asyncio.run(read(FakeJaeger(traces), since, until))
    assert sorted(ids(pages)) == [f"{1:032x}", f"{4:032x}"]


@pytest.mark.integration
def test_a_full_window_is_halved_and_equal_start_times_at_the_split_are_each_read_once() -> None:
    since, until = T0 / 1e9, (T0 + 10**9) / 1e9
    lo, hi = math.floor(since * 1e9) - SLACK_NS, math.ceil(until * 1e9) + SLACK_NS
    middle = (lo + hi) // 2  # the first split
    starts = [middle] * 3 + [middle - 1] * 2 + [T0 + k * 10**8 + 30_000_000 for k in range(10)]
    store = FakeJaeger(synthetic(starts, ROOT))
    pages = asyncio.run(read(store, since, until, page_size=4))
    assert sorted(ids(pages)) == sorted(store.traces)  # none lost, none twice
    assert all(len(page) < 4 for page in pages) and {q["query.num_traces"] for q in store.query(PATH)} == {"4"}
    windows = [
        (parse_rfc3339(q["query.start_time_min"]), parse_rfc3339(q["query.start_time_max"])) for q in store.query(PATH)
    ]
    assert windows[0] == (lo, hi) and (lo, middle) in windows and (middle, hi) in windows
    assert all(b - a >= MIN_WINDOW_NS // 2 for a, b in windows)


@pytest.mark.integration
def test_more_equal_start_times_than_a_page_are_read_with_a_larger_num_traces() -> None:
    since, until = T0 / 1e9, (T0 + 10**9) / 1e9
    starts = [T0 + 5 * 10**8] * 10 + [T0 + 7 * 10**8]
    store = FakeJaeger(synthetic(starts))
    pages = asyncio.run(read(store, since, until, page_size=4))
    assert sorted(ids(pages)) == sorted(synthetic(starts))
    assert {q["query.num_traces"] for q in store.query(PATH)} == {"4", "16"}


@pytest.mark.integration
def test_every_trace_in_the_window_once_whatever_the_start_times_and_page_size() -> None:
    loop = asyncio.new_event_loop()
    store = FakeJaeger()
    loop.run_until_complete(store.__aenter__())
    grid = st.integers(0, 80).map(lambda k: T0 + k * 5_000_000)  # 0.4 s on a 5 ms grid: many equal starts
    bound = st.integers(-10, 90).map(lambda k: T0 + k * 5_000_000)

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(starts=st.lists(grid, min_size=1, max_size=30), page_size=st.integers(2, 6), bounds=st.tuples(bound, bound))
    def check(starts: list[int], page_size: int, bounds: tuple[int, int]) -> None:
        since, until = min(bounds) / 1e9, max(bounds) / 1e9 + 0.01
        store.traces = synthetic(starts)
        src = source(store.url, page_size=page_size)
        pages = loop.run_until_complete(collect(src, since, until))
        loop.run_until_complete(src.close())
        expected = {i for i, spans in store.traces.items() if since <= trace_start(spans) / 1e9 < until}
        assert sorted(ids(pages)) == sorted(expected)

    try:
        check()
    finally:
        loop.run_until_complete(store.__aexit__())
        loop.close()


@pytest.mark.integration
def test_a_500_is_retried_once() -> None:
    store = FakeJaeger(synthetic([T0]), failures=[(500, "storage hiccup")])
    pages = asyncio.run(read(store, T0 / 1e9, T0 / 1e9 + 1))
    assert ids(pages) == [f"{1:032x}"]
    assert len(store.requests) == 2 and store.requests[0].query == store.requests[1].query


@pytest.mark.integration
def test_a_401_is_an_auth_error_naming_the_url_without_the_token() -> None:
    store = FakeJaeger(synthetic([T0]), token="right-token")
    with pytest.raises(SourceError) as caught:
        asyncio.run(read(store, T0 / 1e9, T0 / 1e9 + 1, token="wrong-secret-token"))
    assert caught.value.kind == "auth"
    assert f"{store.url}{PATH}" in str(caught.value) and "401" in str(caught.value)
    assert "wrong-secret-token" not in str(caught.value) and "right-token" not in str(caught.value)
    assert len(store.requests) == 1  # not retried


@pytest.mark.integration
def test_the_bearer_token_and_custom_headers_are_sent() -> None:
    store = FakeJaeger(synthetic([T0]), token="s3cret")
    headers = {"X-Scope-OrgID": "tenant-1"}
    pages = asyncio.run(read(store, T0 / 1e9, T0 / 1e9 + 1, token="s3cret", headers=headers))
    assert ids(pages) == [f"{1:032x}"]
    sent = store.requests[0].headers
    assert sent["Authorization"] == "Bearer s3cret" and sent["X-Scope-OrgID"] == "tenant-1"
    assert sent["Accept"] == "application/json"


@pytest.mark.integration
@pytest.mark.parametrize("old", [False, True])
def test_no_traces_is_an_empty_answer(old: bool) -> None:
    store = FakeJaeger(synthetic([T0]), old_empty_answer=old)
    assert asyncio.run(read(store, T0 / 1e9 + 100, T0 / 1e9 + 200)) == []
    assert len(store.requests) == 1


@pytest.mark.integration
def test_trace_not_found_from_a_storage_is_an_empty_answer() -> None:
    store = FakeJaeger(failures=[(404, '{"error":{"httpCode":404,"message":"trace not found"}}\n')])
    assert asyncio.run(read(store, T0 / 1e9, T0 / 1e9 + 1)) == []


@pytest.mark.integration
def test_a_404_that_is_not_jaegers_is_an_error() -> None:
    store = FakeJaeger(failures=[(404, "404 page not found\n")])
    with pytest.raises(SourceError) as caught:
        asyncio.run(read(store, T0 / 1e9, T0 / 1e9 + 1))
    assert caught.value.kind == "client" and PATH in str(caught.value)


BAD_OTLP = {"resourceSpans": [{"scopeSpans": [{"spans": [{"startTimeUnixNano": "soon"}]}]}]}


@pytest.mark.integration
@pytest.mark.parametrize(
    "body", ["{not json", '{"traces": []}', '{"result": {"resourceSpans": "x"}}', json.dumps({"result": BAD_OTLP})]
)
def test_malformed_answers_are_decode_errors_naming_the_request(body: str) -> None:
    store = FakeJaeger(failures=[(200, body)])
    with pytest.raises(SourceError) as caught:
        asyncio.run(read(store, T0 / 1e9, T0 / 1e9 + 1))
    assert caught.value.kind == "decode" and f"{store.url}{PATH}" in str(caught.value)


@pytest.mark.integration
def test_an_empty_or_reversed_range_asks_nothing() -> None:
    store = FakeJaeger(synthetic([T0]))
    assert asyncio.run(read(store, T0 / 1e9, T0 / 1e9)) == []
    assert store.requests == []
