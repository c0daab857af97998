"""The first review endpoint, /api/failing: trace content (failing results with their error text), so it needs
the token. Deprecated for /api/v1/results?outcome=fail (api_v1.py); it answers as before, with a `Deprecation`
header and a `Link` to its successor. The store is read on a worker thread; a store that cannot answer is a 503
(its failure is counted and logged once by the store's health), never a traceback per request."""

from __future__ import annotations

import asyncio
import json

from aiohttp import web

from monitor.review.api_params import BadRequest, bounded, parse_int
from monitor.store.health import StoreUnavailable
from monitor.store.writer import QueuedResultStore

MAX_LIMIT = 500
DEPRECATED = {"Deprecation": "true", "Link": '</api/v1/results?outcome=fail>; rel="successor-version"'}


def review_routes(store: QueuedResultStore | None) -> list[web.RouteDef]:
    """Read-only views of `store` (None: the store is disabled, and the routes say so)."""

    async def failing(request: web.Request) -> web.Response:
        answer = await _failing(request)
        answer.headers.update(DEPRECATED)
        return answer

    async def _failing(request: web.Request) -> web.Response:
        if store is None:
            return web.Response(status=404, text="the result store is disabled\n")
        try:
            evaluator = bounded("evaluator", request.query.get("evaluator", "")) or None
            limit = min(parse_int("limit", request.query.get("limit", "50"), 0), MAX_LIMIT) or 1
        except BadRequest as exc:
            return web.Response(status=400, text=f"{exc}\n")
        unavailable: tuple[type[Exception], ...] = (StoreUnavailable, *store.DATABASE_ERRORS)
        try:
            rows = await asyncio.to_thread(store.failing, evaluator, limit)
        except unavailable as exc:  # counted by the store's health
            return web.Response(status=503, text=f"the result store is unavailable: {type(exc).__name__}\n")
        return web.Response(body=json.dumps(rows, ensure_ascii=False).encode(), content_type="application/json")

    return [web.get("/api/failing", failing)]
