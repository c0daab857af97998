"""PhoenixSource and PhoenixAnnotations against a real Arize Phoenix (tests/support/phoenix_server.py: one server for
the session, one project per test). Recorded OpenInference corpus traces go in through the OpenTelemetry SDK's
OTLP/HTTP exporter, with fresh ids (Phoenix keeps a span id once per database, whatever the project).

What Phoenix itself changes, the only differences these tests allow between a span sent and the span polled:
- resource: Phoenix keeps none; the source sets only service.name (the `service`, default the project's name);
- instrumentation scope and OTel span kind: not kept (scope_name '', every span kind INTERNAL);
- times: Phoenix stores microseconds (through a float): start, end and event times within 1 µs;
- JSON-string attributes (keys ending in `metadata`, `tool.parameters`, `llm.prompt_template.variables`):
  parsed on ingest and served flattened; the source folds them back into one JSON string whose value is the
  same, except that Phoenix turns the items of a mixed-type array into strings ([1, false] → ["1", "False"]:
  phoenix/server/api/routers/v1/spans.py `_to_array_value`).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import secrets
import time
import urllib.parse
import urllib.request
from dataclasses import replace
from typing import Any

import pytest
from aiohttp import web

from evaluators.traces.records import SpanEvent, SpanRecord
from monitor.config.sources import PhoenixSourceConfig
from monitor.sources.base import PolledTrace, SourceError
from monitor.sources.http import SourceHttp
from monitor.sources.phoenix.annotations import Annotation, PhoenixAnnotations
from monitor.sources.phoenix.source import JSON_STRING_SUFFIXES, PhoenixSource
from tests.monitor.sources.serving import answering, serving
from tests.support.otlp_json import corpus_traces
from tests.support.phoenix_server import export, wait_for_spans

SCENARIOS = ("oi_openai__tool_agent", "oi_langchain__tool_agent", "oi_openai__tool_error")
_projects = itertools.count()


@pytest.fixture
def project() -> str:
    return f"agent-monitor-{secrets.token_hex(3)}-{next(_projects)}"


def fresh(traces: list[list[SpanRecord]], spacing: float | None = None) -> dict[str, list[SpanRecord]]:
    """The traces with new trace and span ids; with `spacing`, trace i moved to start at an hour ago + i*spacing."""
    result: dict[str, list[SpanRecord]] = {}
    base = int(time.time()) - 3600
    for index, spans in enumerate(traces):
        trace_id = secrets.token_hex(16)
        ids = {s.span_id: secrets.token_hex(8) for s in spans}
        shift = (
            0 if spacing is None else int((base + index * spacing) * 1e9) - min(s.start_time_unix_nano for s in spans)
        )
        result[trace_id] = [
            replace(
                s, trace_id=trace_id, span_id=ids[s.span_id], parent_span_id=ids.get(s.parent_span_id, ""),
                start_time_unix_nano=s.start_time_unix_nano + shift, end_time_unix_nano=s.end_time_unix_nano + shift,
                events=[replace(e, time_unix_nano=e.time_unix_nano + shift) for e in s.events],
            )
            for s in spans
        ]  # fmt: skip
    return result


def load(url: str, project: str, scenarios: tuple[str, ...], copies: int = 1, spacing: float | None = None):
    traces = fresh(list(corpus_traces(*scenarios).values()) * copies, spacing)
    export(url, project, [s for spans in traces.values() for s in spans])
    wait_for_spans(url, project, traces, sum(map(len, traces.values())))
    return traces


def source(url: str, project: str, **settings: Any) -> PhoenixSource:
    return PhoenixSource(PhoenixSourceConfig(type="phoenix", name="px", url=url, project=project, **settings))


def poll(src: PhoenixSource, since: float = 0.0, until: float = 4e9) -> list[list[PolledTrace]]:
    async def run() -> list[list[PolledTrace]]:
        try:
            return [page async for page in src.pages(since, until)]
        finally:
            await src.close()

    return asyncio.run(run())


def as_phoenix_serves(value: Any) -> Any:
    """A JSON value as Phoenix serves it back: the items of a mixed-type array as strings."""
    if isinstance(value, dict):
        return {k: as_phoenix_serves(v) for k, v in value.items()}
    if isinstance(value, list):
        if value and not all(isinstance(v, type(value[0])) for v in value):
            return [str(v) for v in value]
        return [as_phoenix_serves(v) for v in value]
    return value


def assert_same_attributes(sent: dict[str, Any], back: dict[str, Any]) -> None:
    assert set(back) == set(sent)
    for key, value in sent.items():
        if key.endswith(JSON_STRING_SUFFIXES) and isinstance(value, str):
            assert json.loads(back[key]) == as_phoenix_serves(json.loads(value)), key
        else:
            assert back[key] == value, key


def assert_close_ns(sent: int, back: int) -> None:
    assert abs(sent - back) <= 1000, (sent, back)


def assert_events(sent: list[SpanEvent], back: list[SpanEvent]) -> None:
    assert [(e.name, e.attributes) for e in back] == [(e.name, e.attributes) for e in sent]
    for a, b in zip(sent, back):
        assert_close_ns(a.time_unix_nano, b.time_unix_nano)


def test_corpus_traces_come_back_whole(phoenix: str, project: str) -> None:
    sent = load(phoenix, project, SCENARIOS)
    pages = poll(source(phoenix, project))
    polled = {t.trace_id: t for page in pages for t in page}
    assert set(polled) == set(sent) and sum(map(len, pages)) == len(sent)
    for trace_id, spans in sent.items():
        trace = polled[trace_id]
        assert trace.trace_id == trace_id.lower() and len(trace_id) == 32
        assert math.isclose(trace.start, min(s.start_time_unix_nano for s in spans) / 1e9, abs_tol=1e-6)
        assert trace.end is not None
        assert math.isclose(trace.end, max(s.end_time_unix_nano for s in spans) / 1e9, abs_tol=1e-6)
        back = {s.span_id: s for s in trace.spans}
        assert set(back) == {s.span_id for s in spans}
        for span in spans:
            got = back[span.span_id]
            assert (got.trace_id, got.parent_span_id, got.name) == (span.trace_id, span.parent_span_id, span.name)
            assert (got.status_code, got.status_message) == (span.status_code, span.status_message)
            assert_same_attributes(span.attributes, got.attributes)
            assert "openinference.span.kind" in got.attributes
            assert_close_ns(span.start_time_unix_nano, got.start_time_unix_nano)
            assert_close_ns(span.end_time_unix_nano, got.end_time_unix_nano)
            assert_events(span.events, got.events)
            assert got.resource_attributes == {"service.name": project}
            assert (got.kind, got.scope_name, got.links) == (1, "", [])
    renamed = poll(source(phoenix, project, service="checkout-agent"))
    assert {s.service_name for page in renamed for t in page for s in t.spans} == {"checkout-agent"}


def test_a_window_selects_the_traces_that_started_inside_it(phoenix: str, project: str) -> None:
    sent = load(phoenix, project, SCENARIOS, copies=2, spacing=10.0)
    every = sorted((t for page in poll(source(phoenix, project)) for t in page), key=lambda t: t.start)
    assert len(every) == len(sent) == 6
    ids = [t.trace_id for t in every]
    starts = [t.start for t in every]
    assert all(b - a > 9 for a, b in itertools.pairwise(starts))

    def window(since: float, until: float) -> list[PolledTrace]:
        return sorted((t for page in poll(source(phoenix, project), since, until) for t in page), key=lambda t: t.start)

    assert [t.trace_id for t in window(starts[1] - 5, starts[3] + 5)] == ids[1:4]
    assert [t.trace_id for t in window(starts[1], starts[3])] == ids[1:3]  # [since, until) at the exact starts
    assert [t.trace_id for t in window(starts[1] + 1e-6, starts[3] + 1e-6)] == ids[2:4]
    assert window(starts[2], starts[2]) == []
    assert window(starts[-1] + 1, starts[-1] + 3600) == []


def test_page_size_one_yields_each_trace_once_and_whole(phoenix: str, project: str) -> None:
    sent = load(phoenix, project, SCENARIOS[:2], copies=2)
    src = source(phoenix, project, page_size=1)
    src.span_limit = 2  # the spans' cursor too
    pages = poll(src)
    assert [len(page) for page in pages] == [1] * len(sent)
    polled = [t for page in pages for t in page]
    assert sorted(t.trace_id for t in polled) == sorted(sent)
    for trace in polled:
        assert sorted(s.span_id for s in trace.spans) == sorted(s.span_id for s in sent[trace.trace_id])
    assert src.http.requests >= len(sent) + sum(math.ceil(len(s) / 2) for s in sent.values())


def test_an_unknown_project_is_a_client_error(phoenix: str) -> None:
    with pytest.raises(SourceError) as info:
        poll(source(phoenix, "no-such-project"))
    assert info.value.kind == "client" and "404" in str(info.value) and "not found" in str(info.value)


def _annotations(url: str, project: str, kind: str, ids: list[str]) -> list[dict[str, Any]]:
    query = urllib.parse.urlencode([(f"{kind}_ids", i) for i in ids] + [("limit", 1000)])
    with urllib.request.urlopen(f"{url}/v1/projects/{project}/{kind}_annotations?{query}", timeout=10) as response:
        return list(json.load(response)["data"])


def test_annotations_are_written_back_and_updated_not_duplicated(phoenix: str, project: str) -> None:
    (trace_id, spans), *_ = load(phoenix, project, SCENARIOS[:1]).items()
    root, child = spans[0].span_id, spans[1].span_id

    def results(version: int) -> list[Annotation]:
        return [
            Annotation(trace_id, root, "tool_errors", "CODE", "pass", 1.0 * version, f"no tool error v{version}"),
            Annotation(trace_id, child, "helpfulness", "LLM", "helpful", 0.5 * version, "answers the question"),
            Annotation(trace_id, None, "goal_met", "LLM", None, 0.25 * version, None),
        ]

    def post(annotations: list[Annotation]) -> int:
        writer = PhoenixAnnotations(PhoenixSourceConfig(type="phoenix", name="px", url=phoenix, project=project))

        async def run() -> int:
            try:
                return await writer.post(annotations)
            finally:
                await writer.close()

        return asyncio.run(run())

    assert post(results(1)) == 3
    first = {(a["span_id"], a["name"]): a for a in _annotations(phoenix, project, "span", [root, child])}
    assert set(first) == {(root, "tool_errors"), (child, "helpfulness")}
    assert first[root, "tool_errors"]["result"] == {"label": "pass", "score": 1.0, "explanation": "no tool error v1"}
    assert first[root, "tool_errors"]["annotator_kind"] == "CODE"
    assert first[root, "tool_errors"]["identifier"] == "agent-monitor:tool_errors"
    assert first[child, "helpfulness"]["annotator_kind"] == "LLM"
    [trace_note] = _annotations(phoenix, project, "trace", [trace_id])
    assert (trace_note["name"], trace_note["annotator_kind"], trace_note["trace_id"]) == ("goal_met", "LLM", trace_id)
    assert trace_note["result"] == {"label": None, "score": 0.25, "explanation": None}

    assert post(results(2)) == 3  # the same evaluators again: updated in place
    second = {(a["span_id"], a["name"]): a for a in _annotations(phoenix, project, "span", [root, child])}
    assert len(second) == 2 and len(_annotations(phoenix, project, "span", [root, child])) == 2
    assert {k: a["id"] for k, a in second.items()} == {k: a["id"] for k, a in first.items()}
    assert second[root, "tool_errors"]["result"]["score"] == 2.0
    [trace_note_2] = _annotations(phoenix, project, "trace", [trace_id])
    assert (trace_note_2["id"], trace_note_2["result"]["score"]) == (trace_note["id"], 0.5)

    unknown = Annotation(trace_id, "00000000000000aa", "tool_errors", "CODE", "pass", 1.0, None)
    assert post([unknown, results(3)[0]]) == 1  # Phoenix refuses the batch (404): one at a time, unknown left out
    [again] = [a for a in _annotations(phoenix, project, "span", [root]) if a["name"] == "tool_errors"]
    assert again["result"]["score"] == 3.0


# --- error paths, on a tiny fake (the real server does not fail on demand) ---------------------------------------


@pytest.mark.integration
def test_a_server_error_is_retried() -> None:
    calls: list[str] = []
    kind = {"key": "openinference.span.kind", "value": {"int_value": None, "string_value": "AGENT"}}
    span = {"trace_id": "ab" * 16, "span_id": "cd" * 8, "name": "agent", "start_time_unix_nano": 2_000_000_000_123,
            "attributes": [kind]}  # fmt: skip
    trace = {"trace_id": "ab" * 16, "start_time": "1970-01-01T00:33:20.000000+00:00"}

    async def handler(request: web.Request) -> web.Response:
        calls.append(request.path)
        if len(calls) == 1:
            return web.Response(status=500, text="database is locked")
        data = [trace] if request.path.endswith("/traces") else [span]
        return web.json_response({"data": data, "next_cursor": None})

    async def run() -> list[PolledTrace]:
        async with serving(answering(handler)) as url:
            config = PhoenixSourceConfig(type="phoenix", name="px", url=url, project="p", retries=2)
            src = PhoenixSource(config, http=SourceHttp(config, sleep=lambda _: asyncio.sleep(0)))
            try:
                return [t async for page in src.pages(0, 4e9) for t in page]
            finally:
                await src.close()

    [polled] = asyncio.run(run())
    assert calls == ["/v1/projects/p/traces", "/v1/projects/p/traces", "/v1/projects/p/spans/otlpv1"]
    assert (polled.trace_id, polled.start, polled.spans[0].attributes) == ("ab" * 16, 2000.0, {
        "openinference.span.kind": "AGENT"})  # fmt: skip
    assert polled.spans[0].start_time_unix_nano == 2_000_000_000_000


@pytest.mark.integration
def test_a_refused_token_is_an_auth_error_that_does_not_show_it() -> None:
    token = "phx-secret-" + secrets.token_hex(8)
    seen: list[str | None] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append(request.headers.get("Authorization"))
        return web.Response(status=401, text="Invalid token")

    async def run() -> tuple[SourceError, SourceError]:
        async with serving(answering(handler)) as url:
            config = PhoenixSourceConfig(type="phoenix", name="px", url=url, project="p", token=token)
            src, writer = PhoenixSource(config), PhoenixAnnotations(config)
            failures = []
            try:
                for attempt in (
                    poll_once(src),
                    writer.post([Annotation("ab" * 16, None, "x", "CODE", "ok", 1.0, None)]),
                ):
                    with pytest.raises(SourceError) as info:
                        await attempt
                    failures.append(info.value)
            finally:
                await src.close()
                await writer.close()
            return failures[0], failures[1]

    async def poll_once(src: PhoenixSource) -> None:
        async for _ in src.pages(0, 1):
            pass

    for failure in asyncio.run(run()):
        assert failure.kind == "auth" and "401" in str(failure) and token not in str(failure)
    assert seen == [f"Bearer {token}"] * 2
