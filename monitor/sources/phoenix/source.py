"""PhoenixSource: a project's traces from Arize Phoenix's REST API (verified on Phoenix 20.26.1: its /openapi.json
and phoenix/server/api/routers/v1/traces.py, spans.py).

- `GET /v1/projects/{project}/traces?start_time&end_time&sort=start_time&order=asc&limit&cursor`: the traces
  whose start (the earliest span start Phoenix has seen) is in [start_time, end_time), ISO 8601, keyset-paged by
  `next_cursor` (limit <= 1000). Ids are lowercase hex; times ISO 8601 with microseconds.
- `GET /v1/projects/{project}/spans/otlpv1?trace_id=..&trace_id=..&limit&cursor`: their spans as OTLP JSON spans
  (snake_case, AnyValues with null siblings, ids hex), paged by `next_cursor` (limit <= 1000).

What Phoenix does not keep, and how a polled span differs from the one the application sent:
- no resource: `service.name` is the source's `service` (default: the project's name), nothing else;
- no instrumentation scope (scope_name ''), no links, no OTel span kind (every span comes back INTERNAL);
- times in microseconds (sent through a float): rounded here to the microsecond Phoenix stored;
- the JSON-string attributes (every key ending in `metadata`, `tool.parameters`, `llm.prompt_template.variables`)
  are parsed on ingest and served flattened (`metadata.user_id`): folded back here into one JSON string (the same
  JSON value; its formatting, and empty objects or arrays inside it, are lost);
- spans without OpenInference attributes get ones Phoenix synthesizes from `gen_ai.*` (kept as served).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from evaluators.traces.errors import TraceDecodeError
from evaluators.traces.otlp_json import decode_traces_object
from evaluators.traces.records import Attributes, SpanRecord
from monitor.config.sources import PhoenixSourceConfig
from monitor.sources.base import PolledTrace, SourceError, span_time_range
from monitor.sources.guard import RunGuard
from monitor.sources.http import HttpSource, SourceHttp

log = logging.getLogger(__name__)

MAX_LIMIT = 1000  # both endpoints: Query(le=1000)
TRACE_IDS_PER_REQUEST = 50  # trace_id=<32 hex> repeated: about 2 kB of query string
# Phoenix's JSON_STRING_ATTRIBUTES (document.metadata, llm.prompt_template.variables, metadata, tool.parameters)
JSON_STRING_SUFFIXES = ("metadata", "llm.prompt_template.variables", "tool.parameters")


class PhoenixSource(HttpSource):
    """A TraceSource over one Phoenix project."""

    def __init__(self, config: PhoenixSourceConfig, *, http: SourceHttp | None = None) -> None:
        super().__init__(config, http=http)
        self.config = config
        self.service = config.service or config.project
        self.span_limit = MAX_LIMIT  # spans per request (tests lower it to exercise the cursor)
        self._base = f"/v1/projects/{quote(config.project, safe='')}"

    async def pages(
        self, since: float, until: float, guard: RunGuard | None = None
    ) -> AsyncIterator[list[PolledTrace]]:
        """One page per traces page (config.page_size traces, at most 1000), with all their spans."""
        guard = guard if guard is not None else RunGuard()
        params: list[tuple[str, str | int | float]] = [
            ("start_time", _iso(math.floor(since * 1e6) / 1e6)),
            ("end_time", _iso(math.ceil(until * 1e6) / 1e6)),
            ("sort", "start_time"),
            ("order", "asc"),
            ("limit", min(self.config.page_size, MAX_LIMIT)),
        ]
        seen: set[str] = set()
        cursor: str | None = None
        what = f"GET {self.http.base}{self._base}/traces"
        guard.start("traces")
        while True:
            guard.page(what)
            document = await self.http.get_json(f"{self._base}/traces", params + _cursor(cursor), guard=guard)
            rows, cursor = _page(document, what)
            guard.advance(what, "traces", cursor, len(rows))
            starts: dict[str, tuple[str, float]] = {}
            for row in rows:
                trace_id, start = _trace_row(row, what)
                if since <= start < until and trace_id.lower() not in seen:
                    starts[trace_id.lower()] = (trace_id, start)
            seen.update(starts)
            spans = await self._spans([raw for raw, _ in starts.values()], guard)
            page = []
            for trace_id, (_, start) in starts.items():
                if trace_spans := spans.get(trace_id):
                    page.append(PolledTrace(trace_id, start, span_time_range(trace_spans)[1], trace_spans))
            if page:
                yield page
            if not cursor:
                return

    async def _spans(self, trace_ids: list[str], guard: RunGuard) -> dict[str, list[SpanRecord]]:
        """The spans of `trace_ids` by trace id, every page of every batch (at most the guard's spans_per_trace
        of each)."""
        found: dict[str, list[SpanRecord]] = {}
        path = f"{self._base}/spans/otlpv1"
        for first in range(0, len(trace_ids), TRACE_IDS_PER_REQUEST):
            batch: list[tuple[str, str | int | float]] = [
                ("trace_id", t) for t in trace_ids[first : first + TRACE_IDS_PER_REQUEST]
            ]
            batch.append(("limit", self.span_limit))
            cursor: str | None = None
            what = f"GET {self.http.base}{path}"
            chain = ("spans", trace_ids[first])
            guard.start(chain)
            while True:
                guard.page(what)
                rows, cursor = _page(await self.http.get_json(path, batch + _cursor(cursor), guard=guard), what)
                guard.advance(what, chain, cursor, len(rows))
                for span in self._decode(rows, what):
                    guard.keep(span.trace_id, found.setdefault(span.trace_id, []), (span,))
                if not cursor:
                    break
        for spans in found.values():
            spans.sort(key=lambda s: (s.start_time_unix_nano, s.span_id))
        return found

    def _decode(self, rows: list[Any], where: str) -> list[SpanRecord]:
        document = {
            "resource_spans": [
                {
                    "resource": {"attributes": [{"key": "service.name", "value": {"string_value": self.service}}]},
                    "scope_spans": [{"spans": rows}],
                }
            ]
        }
        try:
            batch = decode_traces_object(document, where)
        except TraceDecodeError as exc:
            raise SourceError("decode", str(exc)) from None
        for rejected in batch.rejected:
            log.warning("source %s: a span left out (%s): %s", self.name, rejected.reason, rejected.where)
        for span in batch.spans:
            span.start_time_unix_nano = _microsecond(span.start_time_unix_nano)
            span.end_time_unix_nano = _microsecond(span.end_time_unix_nano)
            for event in span.events:
                event.time_unix_nano = _microsecond(event.time_unix_nano)
            span.attributes = fold_json_strings(span.attributes)
        return batch.spans


def fold_json_strings(attributes: Attributes) -> Attributes:
    """Phoenix's flattened JSON-string attributes (`metadata.a.b`, `tool.parameters.0.x`) as one JSON string
    again, where the first of their keys was."""
    groups: dict[str, dict[str, Any]] = {}
    for key, value in attributes.items():
        root = _json_root(key)
        if root is not None and root != key and root not in attributes:
            groups.setdefault(root, {})[key[len(root) + 1 :]] = value
    result: Attributes = {}
    for key, value in attributes.items():
        root = _json_root(key)
        if root is None or root not in groups:
            result[key] = value
        elif root not in result:
            result[root] = json.dumps(_nest(groups[root]), ensure_ascii=False)
    return result


def _json_root(key: str) -> str | None:
    """The shortest dotted prefix of `key` that Phoenix parses as JSON (phoenix/trace/attributes.py
    load_json_strings: every key ending in one of JSON_STRING_SUFFIXES)."""
    end = key.find(".")
    while end >= 0:
        if key[:end].endswith(JSON_STRING_SUFFIXES):
            return key[:end]
        end = key.find(".", end + 1)
    return key if key.endswith(JSON_STRING_SUFFIXES) else None


def _nest(flat: dict[str, Any]) -> Any:
    """{"a.0.b": 1} → {"a": [{"b": 1}]} (Phoenix flattens lists of objects with their indices)."""
    tree: dict[str, Any] = {}
    for path, value in flat.items():
        node = tree
        *parents, leaf = path.split(".")
        for part in parents:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        node[leaf] = value
    return _lists(tree)


def _lists(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    if node and sorted(node) == sorted(str(i) for i in range(len(node))):
        return [_lists(node[str(i)]) for i in range(len(node))]
    return {k: _lists(v) for k, v in node.items()}


def _microsecond(nanos: int) -> int:
    return round(nanos / 1000) * 1000 if nanos > 0 else nanos


def _iso(seconds: float) -> str:
    seconds = min(max(seconds, 0.0), 253402300799.0)  # 1970 .. 9999
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _cursor(cursor: str | None) -> list[tuple[str, str | int | float]]:
    return [("cursor", cursor)] if cursor else []


def _page(document: Any, what: str) -> tuple[list[Any], str | None]:
    if not isinstance(document, dict) or not isinstance(document.get("data"), list):
        raise SourceError("decode", f"{what}: expected an object with a `data` array")
    cursor = document.get("next_cursor")
    if cursor is not None and not isinstance(cursor, str):
        raise SourceError("decode", f"{what}: next_cursor is not a string")
    return document["data"], cursor or None


def _trace_row(row: Any, what: str) -> tuple[str, float]:
    """(trace_id, start in Unix seconds) of one TraceData."""
    try:
        trace_id, start = row["trace_id"], datetime.fromisoformat(row["start_time"])
        if not isinstance(trace_id, str) or not trace_id:
            raise TypeError("trace_id")
    except (KeyError, TypeError, ValueError) as exc:
        raise SourceError("decode", f"{what}: a trace without a valid trace_id or start_time: {exc!r}") from None
    return trace_id, (start if start.tzinfo else start.replace(tzinfo=UTC)).timestamp()
