"""Open endpoints of the metrics port, as Prometheus and orchestrators expect them: /metrics, /healthz, /readyz."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from aiohttp import web

if TYPE_CHECKING:
    from ..daemon import Daemon

OPEN_PATHS = frozenset({"/metrics", "/healthz", "/readyz"})


def health_routes(daemon: Daemon) -> list[web.RouteDef]:
    async def metrics(request: web.Request) -> web.Response:
        body, content_type = daemon.metrics.render(request.headers.get("Accept"))
        return web.Response(body=body, headers={"Content-Type": content_type})

    async def healthz(request: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def readyz(request: web.Request) -> web.Response:
        checks = {
            "receivers_bound": daemon.started,
            "accepting": daemon.ingestor.accepting,
            "queue_has_room": daemon.worker.free_slots > 0,
            "pending_below_limit": daemon.assembler.has_room_for(1),
        }
        status = 200 if all(checks.values()) else 503
        return web.Response(status=status, body=json.dumps(checks).encode(), content_type="application/json")

    return [web.get("/metrics", metrics), web.get("/healthz", healthz), web.get("/readyz", readyz)]
