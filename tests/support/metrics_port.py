"""Serve the metrics port's real aiohttp app (build_api_app) on 127.0.0.1 from a thread, and a plain client."""

from __future__ import annotations

import asyncio
import http.client
import ssl
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from aiohttp import web

from evaluators.traces import Trace
from monitor.config.review import ReviewConfig
from monitor.engine.configured import ConfiguredEvaluator
from monitor.engine.trace_evaluation import TraceEvaluator
from monitor.review.models import ReviewReader
from monitor.store.sqlite import ResultStore
from monitor.web.app import build_api_app
from monitor.web.pages import EvaluatorsInfo
from monitor.web.server import WebServer

WAIT = 10.0
JAEGER = "http://localhost:16686/trace/{trace_id}"


def store_evaluated(
    path: Path, traces: Iterable[Trace], evaluators: list[ConfiguredEvaluator], **store_options: Any
) -> None:
    """`traces` evaluated by `evaluators` as the daemon does (every result kept) and written to a SQLite store."""
    engine = TraceEvaluator(evaluators, store_results="all")
    store = ResultStore(path, **store_options)
    try:
        store.write([engine.outcome(t) for t in traces])
    finally:
        store.close()


def review_app(
    reader: ReviewReader | None,
    token: str | None,
    evaluators: EvaluatorsInfo = None,
    review: ReviewConfig | None = None,
) -> web.Application:
    """The metrics port as the daemon builds it, with the review page reading `reader`."""
    return build_api_app(
        lambda accept: (b"# metrics\n", "text/plain"),
        lambda: {"ok": True},
        token,
        reader=reader,
        evaluators_info=evaluators,
        review=review or ReviewConfig(trace_url_template=JAEGER, page_size=20),
    )


@contextmanager
def serve(app: web.Application, ssl_context: ssl.SSLContext | None = None) -> Iterator[str]:
    """The app on 127.0.0.1 (a free port) in an event loop of its own thread; yields the base URL."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="review-app", daemon=True)
    thread.start()
    server = WebServer(app, "127.0.0.1", 0, name="review-test", ssl_context=ssl_context)
    try:
        asyncio.run_coroutine_threadsafe(server.start(), loop).result(WAIT)
        yield f"{'https' if ssl_context else 'http'}://127.0.0.1:{server.bound_port}"
    finally:
        asyncio.run_coroutine_threadsafe(server.shutdown(0.5), loop).result(WAIT)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(WAIT)
        loop.close()


@dataclass
class Answer:
    status: int
    headers: http.client.HTTPMessage
    body: str

    @property
    def location(self) -> str | None:
        return self.headers.get("Location")


def fetch(
    base: str, path: str, headers: Mapping[str, str] | None = None, method: str = "GET", body: str | None = None
) -> Answer:
    """One request, redirects not followed."""
    parts = urlsplit(base)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=WAIT)
    try:
        conn.request(method, path, body=body, headers=dict(headers or {}))
        response = conn.getresponse()
        return Answer(response.status, response.headers, response.read().decode("utf-8", "replace"))
    finally:
        conn.close()


def post_form(base: str, path: str, form: str, headers: Mapping[str, str] | None = None) -> Answer:
    all_headers = {"Content-Type": "application/x-www-form-urlencoded", **(headers or {})}
    return fetch(base, path, all_headers, "POST", form)
