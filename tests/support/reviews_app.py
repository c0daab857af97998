"""The metrics port as the daemon builds it for reviews: a real result store (SQLite file or PostgreSQL), its
review reader, `ReviewWriter` counting into a real MetricsExporter, served on 127.0.0.1; and an HTTP client that
sends any method and body."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from monitor.metrics import MetricsExporter
from monitor.outcomes import TraceDetailRow
from monitor.review.of_store import reader_of
from monitor.store.writer import QueuedResultStore
from monitor.web.access import Access, AccessMode
from monitor.web.app import build_api_app
from monitor.web.openapi import PREFIX
from monitor.web.review_writer import ReviewWriter
from tests.support.store_builders import outcome, row
from tests.support.threaded_server import serve

TOKEN = "review-token"
BEARER = {"Authorization": f"Bearer {TOKEN}"}
TRACE = "ab" * 16
OTHER = "cd" * 16
STEPS = (
    ("s1", None, 0, "agent", "support", 0.0, 900.0, None, None, None, None, None, None, None),
    ("s2", "s1", 1, "llm", "chat gpt-4o", 0.0, 300.0, None, "gpt-4o", 10, 5, None, 0.002, "price_table"),
    ("s3", "s1", 1, "tool", "lookup_order", 300.0, 100.0, None, None, None, None, None, None, None),
)


def fill(store: QueuedResultStore) -> None:
    """TRACE: a failing `faithful` result, a passing `polite` one and a passing llm-level `json_valid` one on span
    s2; OTHER: a failing `faithful` one."""
    detail = TraceDetailRow(("support",), (("gpt-4o", 1, 10, 5, 0.002, 0),), ("lookup_order",), (), STEPS, False,
                            0.002, 0)  # fmt: skip
    rows = (row("faithful", False), row("polite", True), row("json_valid", True, level="llm", span_id="s2"))
    first = outcome(TRACE, *rows, given="where is my order?", answer="refunded", detail=detail)
    store.write([first, outcome(OTHER, row("faithful", False))])


@dataclass
class Port:
    base: str
    metrics: MetricsExporter

    def url(self, path: str) -> str:
        return f"{self.base}{PREFIX}{path}"

    def count(self, evaluator: str, verdict: str, agreement: str) -> float:
        value = self.metrics.registry.get_sample_value(
            "agent_eval_reviews_total", {"evaluator": evaluator, "verdict": verdict, "agreement": agreement}
        )
        return value or 0.0


@contextmanager
def reviews_port(
    store: QueuedResultStore | None, token: str | None = TOKEN, mode: AccessMode = "loopback"
) -> Iterator[Port]:
    """The port over `store` (None: the store disabled), with the API `token` (None: none configured)."""
    metrics = MetricsExporter()
    reviewing = ReviewWriter(store, on_reviewed=metrics.reviews.count)
    app = build_api_app(
        metrics.render,
        dict,
        token,
        reader=reader_of(store) if store is not None else None,
        access=Access(token, mode),
        reviewing=reviewing,
    )
    with serve(app) as base:
        yield Port(base, metrics)


def send(
    url: str, method: str = "GET", body: Any = None, headers: dict[str, str] | None = None, raw: bytes | None = None
) -> tuple[int, dict[str, str], Any]:
    """(status, headers, JSON body or text) of `method url` with `body` as JSON (or `raw` bytes)."""
    data = raw if raw is not None else None if body is None else json.dumps(body).encode()
    head = {"Content-Type": "application/json", **(headers or {})} if data is not None else dict(headers or {})
    request = urllib.request.Request(url, data=data, method=method, headers=head)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            status, got, text = answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as exc:
        status, got, text = exc.code, dict(exc.headers), exc.read()
    try:
        return status, got, json.loads(text)
    except ValueError:
        return status, got, text.decode("utf-8", "replace")


def review_body(trace_id: str = TRACE, evaluator: str = "faithful", **fields: Any) -> dict[str, Any]:
    return {"trace_id": trace_id, "evaluator": evaluator, "agreement": "disagree", "reviewer": "ann", **fields}
