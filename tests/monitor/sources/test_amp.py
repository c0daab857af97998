"""AmpSource against a fake AMP trace service on 127.0.0.1 that serves recorded corpus traces in the export
shape of github.com/wso2/agent-manager (traces-observer-service/opensearch/types.go: FullTrace, Span) and
filters like it (startTime/endTime inclusive, limit, offset, sortOrder, organization/project/agent/environment)."""

from __future__ import annotations

import asyncio
import dataclasses
import re
from datetime import UTC, datetime
from typing import Any

import pytest
from aiohttp import web
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaluators.traces.records import SPAN_KIND_NAMES, STATUS_NAMES, SpanRecord
from monitor.config.sources import AmpSourceConfig
from monitor.sources.amp import AmpSource, format_time, rfc3339_ns
from monitor.sources.base import PolledTrace, SourceError
from monitor.sources.http import SourceHttp
from tests.monitor.sources.serving import serving
from tests.support.otlp_json import corpus_traces

TOKEN = "s3cret-amp-token"
SCOPE = {"organization": "acme", "project": "shop", "agent": "helper", "environment": "Development"}
SCENARIOS = ("oi_openai__tool_agent", "otel_genai__tool_error", "adk_native__tool_agent", "strands__tool_agent")


def go_time(ns: int) -> str:
    """RFC 3339 as Go's time.RFC3339Nano writes it: trailing zeros of the fraction dropped."""
    seconds, fraction = divmod(ns, 10**9)
    text = f"{datetime.fromtimestamp(seconds, UTC):%Y-%m-%dT%H:%M:%S}"
    return text + (f".{fraction:09d}".rstrip("0") if fraction else "") + "Z"


def go_parse(text: str) -> int:
    match = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?Z", text)
    if match is None:
        raise ValueError(text)
    seconds = int(datetime.fromisoformat(match[1] + "+00:00").timestamp())
    return seconds * 10**9 + int((match[2] or "").ljust(9, "0"))


def root_start(spans: list[SpanRecord]) -> int:
    roots = [s for s in spans if not s.parent_span_id] or spans
    return min(s.start_time_unix_nano for s in roots)


def amp_span_json(span: SpanRecord, i: int) -> dict[str, Any]:
    """A SpanRecord as AMP serves it (the spellings of kind and status vary as they do in the service)."""
    kind = SPAN_KIND_NAMES[span.kind]
    document = {
        "traceId": span.trace_id,
        "spanId": span.span_id,
        "name": span.name,
        "service": "uid-of-the-component",  # openchoreo.dev/component-uid, not service.name
        "kind": f"SPAN_KIND_{kind}" if i % 2 else kind,
        "startTime": go_time(span.start_time_unix_nano),
        "endTime": go_time(span.end_time_unix_nano),
        "durationInNanos": span.end_time_unix_nano - span.start_time_unix_nano,
        "status": str(span.status_code) if i % 2 else STATUS_NAMES[span.status_code],
        "attributes": span.attributes,
        "resource": {**span.resource_attributes, "openchoreo.dev/component-uid": "uid-of-the-component"},
        "ampAttributes": {"kind": "unknown", "status": {"error": span.status_code == 2}},
    }
    if span.parent_span_id:
        document["parentSpanId"] = span.parent_span_id
    return document


def amp_trace_json(spans: list[SpanRecord]) -> dict[str, Any]:
    roots = [s for s in spans if not s.parent_span_id] or spans
    root = min(roots, key=lambda s: s.start_time_unix_nano)
    ordered = sorted(spans, key=lambda s: s.start_time_unix_nano)
    return {
        "traceId": root.trace_id,
        "rootSpanId": root.span_id,
        "rootSpanName": root.name,
        "rootSpanKind": "agent",
        "startTime": go_time(root.start_time_unix_nano),
        "endTime": go_time(root.end_time_unix_nano),
        "durationInNanos": root.end_time_unix_nano - root.start_time_unix_nano,
        "spanCount": len(spans),
        "status": {"errorCount": sum(s.status_code == 2 for s in spans)},
        "spans": [amp_span_json(s, i) for i, s in enumerate(ordered)],
    }


def moved(spans: list[SpanRecord], trace_id: str, start_ns: int) -> list[SpanRecord]:
    """A copy of a trace under another id whose root starts at `start_ns`."""
    shift = start_ns - root_start(spans)
    return [
        dataclasses.replace(
            s, trace_id=trace_id, start_time_unix_nano=s.start_time_unix_nano + shift,
            end_time_unix_nano=s.end_time_unix_nano + shift,
        )
        for s in spans
    ]  # fmt: skip


@dataclasses.dataclass
class Stored:
    spans: list[SpanRecord]
    scope: dict[str, str] = dataclasses.field(default_factory=lambda: dict(SCOPE))

    @property
    def start(self) -> int:
        return root_start(self.spans)


class FakeAmp:
    """The export endpoint on both routes, recording each request."""

    def __init__(self, traces: list[Stored], *, offset: bool = True, replies: list[Any] | None = None) -> None:
        self.traces = traces
        self.honour_offset = offset
        self.replies = list(replies or [])  # served first, one per request: a status or a raw body (bytes)
        self.requests: list[tuple[str, dict[str, str], str | None]] = []

    async def handle(self, request: web.Request) -> web.Response:
        query = dict(request.query)
        self.requests.append((request.path, query, request.headers.get("Authorization")))
        if request.headers.get("Authorization") != f"Bearer {TOKEN}":
            return web.json_response({"error": "error", "message": "Unauthorized"}, status=401)
        if self.replies:
            reply = self.replies.pop(0)
            if isinstance(reply, bytes):
                return web.Response(body=reply, content_type="application/json")
            return web.json_response({"error": "error", "message": f"status {reply}"}, status=reply)
        scope = {**query, **request.match_info}
        for path_key, key in (("org", "organization"), ("project", "project"), ("agent", "agent")):
            if path_key in request.match_info:
                scope[key] = scope.pop(path_key)
        try:
            low, high = go_parse(query["startTime"]), go_parse(query["endTime"])
            limit, offset = int(query.get("limit", "100")), int(query.get("offset", "0"))
            assert 1 <= limit <= 1000 and offset >= 0 and query.get("sortOrder", "desc") in ("asc", "desc")
        except (KeyError, ValueError, AssertionError):
            return web.json_response({"error": "error", "message": "invalid parameters"}, status=400)
        matching = [
            t for t in self.traces
            if low <= t.start <= high and all(t.scope[k] == v for k, v in scope.items() if k in SCOPE)
        ]  # fmt: skip
        matching.sort(key=lambda t: (t.start, t.spans[0].trace_id), reverse=query.get("sortOrder") != "asc")
        first = offset if self.honour_offset else 0
        page = matching[first : first + limit]
        return web.json_response({"traces": [amp_trace_json(t.spans) for t in page], "totalCount": len(matching)})


def app_of(fake: FakeAmp) -> web.Application:
    """The fake's export endpoint on both routes."""
    app = web.Application()
    app.router.add_get("/api/v1/traces/export", fake.handle)
    app.router.add_get("/api/v1/orgs/{org}/projects/{project}/agents/{agent}/traces/export", fake.handle)
    return app


async def _no_sleep(_: float) -> None:
    return None


def run(fake: FakeAmp, since: float, until: float, **config: Any) -> list[list[PolledTrace]]:
    async def main() -> list[list[PolledTrace]]:
        async with serving(app_of(fake)) as url:
            settings_ = {"type": "amp", "name": "amp", "url": url, "token": TOKEN, "timeout": 5.0, **SCOPE}
            cfg = AmpSourceConfig(**{**settings_, **config})
            source = AmpSource(cfg, http=SourceHttp(cfg, sleep=_no_sleep))
            try:
                return [page async for page in source.pages(since, until)]
            finally:
                await source.close()

    return asyncio.run(asyncio.wait_for(main(), 30))


def ids(pages: list[list[PolledTrace]]) -> list[str]:
    return [t.trace_id for page in pages for t in page]


def synthetic(starts: list[int]) -> list[Stored]:
    """Copies of a small corpus trace whose roots start at the given nanoseconds, ids 1, 2, ... in order."""
    base = next(iter(corpus_traces("otel_genai__tool_error").values()))
    return [Stored(moved(base, f"{i + 1:032x}", start)) for i, start in enumerate(starts)]


T0 = 1_767_225_600 * 10**9 + 123_456_789  # 2026-01-01T00:00:00.123456789Z
US = 1_000  # a float of Unix seconds tells apart times 1 µs apart (not 1 ns)
UNTIL = (T0 + 10**9) / 1e9


@pytest.mark.integration
def test_every_corpus_trace_in_the_window_once_and_as_recorded() -> None:
    corpus = corpus_traces(*SCENARIOS)
    fake = FakeAmp([Stored(spans) for spans in corpus.values()])
    since = min(root_start(s) for s in corpus.values()) / 1e9 - 1
    until = max(root_start(s) for s in corpus.values()) / 1e9 + 1
    pages = run(fake, since, until, page_size=2)
    assert sorted(ids(pages)) == sorted(corpus) and len(pages) >= 2
    for trace in (t for page in pages for t in page):
        expected = sorted(corpus[trace.trace_id], key=lambda s: s.span_id)
        got = sorted(trace.spans, key=lambda s: s.span_id)

        def fields(s: SpanRecord) -> tuple:
            return (s.trace_id, s.span_id, s.parent_span_id, s.name, s.kind, s.start_time_unix_nano,
                    s.end_time_unix_nano, s.status_code, s.attributes, s.service_name)  # fmt: skip

        assert [fields(s) for s in got] == [fields(s) for s in expected]
        assert all(s.resource_attributes["openchoreo.dev/component-uid"] == "uid-of-the-component" for s in got)
        assert trace.start == root_start(expected) / 1e9
        assert trace.end == max(s.end_time_unix_nano for s in expected) / 1e9
    for path, query, _ in fake.requests:
        assert path == "/api/v1/orgs/acme/projects/shop/agents/helper/traces/export"
        assert query["sortOrder"] == "asc" and query["limit"] == "2" and query["environment"] == "Development"
        assert go_parse(query["startTime"]) < go_parse(query["endTime"])


@pytest.mark.integration
def test_ties_across_page_boundaries_lose_nothing_and_repeat_nothing() -> None:
    starts = [T0, T0 + US, *[T0 + 5 * US] * 7, T0 + 6 * US, T0 + 6 * US, T0 + 9 * US]
    fake = FakeAmp(synthetic(starts))
    got = ids(run(fake, T0 / 1e9, UNTIL, page_size=3))
    assert sorted(got) == sorted(t.spans[0].trace_id for t in fake.traces) and len(got) == len(set(got))
    assert any("offset" in query for _, query, _ in fake.requests)  # 7 at one instant: more than a page


@pytest.mark.integration
def test_a_full_page_at_one_instant_when_the_service_ignores_offset_is_an_error_not_a_loop() -> None:
    fake = FakeAmp(synthetic([T0] * 5), offset=False)
    with pytest.raises(SourceError) as caught:
        run(fake, T0 / 1e9, UNTIL, page_size=2)
    assert caught.value.kind == "client" and "page_size" in str(caught.value) and "traces start at" in str(caught.value)
    assert len(fake.requests) <= 3


@pytest.mark.integration
def test_a_trace_at_since_is_in_and_one_at_until_is_out() -> None:
    fake = FakeAmp(synthetic([T0 - US, T0, T0 + 500_000_000, T0 + 10**9 - US, T0 + 10**9]))
    got = ids(run(fake, T0 / 1e9, (T0 + 10**9) / 1e9, page_size=2))
    assert sorted(got) == [f"{i:032x}" for i in (2, 3, 4)]


@pytest.mark.integration
def test_filters_select_the_agent_on_either_route() -> None:
    traces = synthetic([T0, T0 + US, T0 + 2 * US])
    traces[1].scope["agent"], traces[2].scope["environment"] = "other", "Production"
    fake = FakeAmp(traces)
    assert ids(run(fake, T0 / 1e9, UNTIL)) == [f"{1:032x}"]
    assert fake.requests[0][0] == "/api/v1/orgs/acme/projects/shop/agents/helper/traces/export"
    fake.requests.clear()
    got = ids(run(fake, T0 / 1e9, UNTIL, organization=None, environment="Production"))
    assert got == [f"{3:032x}"]
    path, query, _ = fake.requests[0]
    assert path == "/api/v1/traces/export" and "organization" not in query
    assert (query["project"], query["agent"], query["environment"]) == ("shop", "helper", "Production")


@pytest.mark.integration
def test_the_bearer_token_is_sent_from_token_env_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AMP_TEST_TOKEN", TOKEN)
    fake = FakeAmp(synthetic([T0]))
    assert len(ids(run(fake, T0 / 1e9, UNTIL, token=None, token_env="AMP_TEST_TOKEN"))) == 1
    assert {auth for _, _, auth in fake.requests} == {f"Bearer {TOKEN}"}


@pytest.mark.integration
def test_a_500_is_retried() -> None:
    fake = FakeAmp(synthetic([T0]), replies=[500])
    assert len(ids(run(fake, T0 / 1e9, UNTIL, retries=2, backoff=0.01))) == 1
    assert len(fake.requests) == 2


@pytest.mark.integration
def test_401_is_an_auth_error_naming_the_url_and_not_the_token() -> None:
    fake = FakeAmp(synthetic([T0]))
    with pytest.raises(SourceError) as caught:
        run(fake, T0 / 1e9, UNTIL, token="wrong-token-value")
    message = str(caught.value)
    assert caught.value.kind == "auth" and "http://127.0.0.1:" in message and "/traces/export" in message
    assert "wrong-token-value" not in message and TOKEN not in message


@pytest.mark.integration
def test_400_is_a_client_error() -> None:
    with pytest.raises(SourceError) as caught:
        run(FakeAmp([], replies=[400]), T0 / 1e9, UNTIL)
    assert caught.value.kind == "client"


@pytest.mark.integration
@pytest.mark.parametrize(
    ("body", "where"),
    [
        (b"<html>not json", "not JSON"),
        (b'{"traces": {}}', "traces"),
        (b'{"traces": [{"traceId": "%s", "spans": {}}]}' % (b"ab" * 16), "traces[0].spans"),
        (
            b'{"traces": [{"traceId": "%s", "spans": [{"spanId": "%s", "startTime": "yesterday"}]}]}'
            % (b"ab" * 16, b"cd" * 8),
            "traces[0].spans[0].startTime",
        ),
        (b'{"traces": [{"traceId": "xyz", "spans": []}]}', "traces[0].traceId"),
    ],
)
def test_malformed_responses_are_decode_errors_naming_the_request(body: bytes, where: str) -> None:
    with pytest.raises(SourceError) as caught:
        run(FakeAmp([], replies=[body]), T0 / 1e9, UNTIL)
    assert caught.value.kind == "decode" and where in str(caught.value) and "GET http://127.0.0.1:" in str(caught.value)
    assert TOKEN not in str(caught.value)


def test_times_and_enums_in_the_spellings_the_service_uses() -> None:
    assert rfc3339_ns("2025-11-03T11:42:20.55201954Z", "t") == go_parse("2025-11-03T11:42:20.55201954Z")
    assert rfc3339_ns("2025-11-03T13:42:20+02:00", "t") == go_parse("2025-11-03T11:42:20Z")
    assert rfc3339_ns("0001-01-01T00:00:00Z", "t") == 0 and rfc3339_ns(None, "t") == 0
    assert go_parse(format_time(T0)) == T0 and format_time(T0).endswith(".123456789Z")
    from monitor.sources.amp import amp_span

    raw = {"traceId": "ab" * 16, "spanId": "cd" * 8, "kind": "SPAN_KIND_CLIENT", "status": "Error"}
    span = amp_span(raw, "ab" * 16, "s")
    assert (span.kind, span.status_code, span.service_name) == (3, 2, "")
    span = amp_span({**raw, "kind": "server", "status": {"code": "STATUS_CODE_OK", "message": "m"}}, "ab" * 16, "s")
    assert (span.kind, span.status_code, span.status_message) == (2, 1, "m")
    span = amp_span({**raw, "service": "svc", "kind": 5, "status": "1"}, "ab" * 16, "s")
    assert (span.kind, span.status_code, span.service_name) == (5, 1, "svc")


@pytest.mark.integration
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    offsets=st.lists(st.sampled_from([0, 0, 1, 2, 2, 2, 7, 9]), min_size=0, max_size=14),
    page_size=st.integers(min_value=1, max_value=6),
)
def test_paging_yields_each_trace_once_whatever_the_ties_and_page_size(offsets: list[int], page_size: int) -> None:
    fake = FakeAmp(synthetic([T0 + US * offset for offset in offsets]))
    pages = run(fake, T0 / 1e9, (T0 + 10**6) / 1e9, page_size=page_size)
    got = ids(pages)
    assert sorted(got) == sorted(t.spans[0].trace_id for t in fake.traces)
    assert len(got) == len(set(got)) and all(pages)
    assert len(fake.requests) <= 2 * len(offsets) + 2
