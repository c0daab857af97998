"""The metrics and health API on the metrics port: /metrics, /healthz, /readyz, /api/failing."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING
from urllib.parse import parse_qs

from .httpserver import Request, Response

if TYPE_CHECKING:
    from .daemon import Daemon

JSON = "application/json"


class ApiHandler:
    def __init__(self, daemon: Daemon) -> None:
        self.daemon = daemon

    async def __call__(self, request: Request) -> Response:
        if request.method not in ("GET", "HEAD"):
            return Response(405, b"method not allowed\n", headers={"Allow": "GET, HEAD"})
        path = request.path
        if path == "/metrics":
            body, content_type = self.daemon.metrics.render(request.headers.get("accept"))
            return Response(200, body, content_type)
        if path == "/healthz":
            return Response(200, b"ok\n")
        if path == "/readyz":
            return self._ready()
        if path == "/api/failing":
            return self._failing(request.query)
        return Response(404, b"not found: try /metrics, /healthz, /readyz, /api/failing\n")

    def _ready(self) -> Response:
        daemon = self.daemon
        checks = {
            "receivers_bound": daemon.started,
            "accepting": daemon.ingestor.accepting,
            "queue_has_room": daemon.worker.free_slots > 0,
            "pending_below_limit": daemon.assembler.has_room_for(1),
        }
        status = 200 if all(checks.values()) else 503
        return Response(status, json.dumps(checks).encode(), JSON)

    def _failing(self, query: str) -> Response:
        store = self.daemon.store
        if store is None:
            return Response(404, b"the result store is disabled\n")
        params = parse_qs(query)
        evaluator = params.get("evaluator", [None])[0]
        try:
            limit = min(max(int(params.get("limit", ["50"])[0]), 1), 500)
        except ValueError:
            return Response(400, b"limit must be a number\n")
        rows = store.failing(evaluator, limit)
        return Response(200, json.dumps(rows, ensure_ascii=False).encode(), JSON)
