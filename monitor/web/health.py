"""Open endpoints of the metrics port, as Prometheus and orchestrators expect them: /metrics, /healthz, /readyz."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping

from aiohttp import web

Render = Callable[[str | None], tuple[bytes, str]]  # Accept header -> (body, content type)
Readiness = Callable[[], Mapping[str, bool]]  # named checks; ready when all hold

# /api/v1/openapi.json: the review API's description, no trace content; /review/logout only clears the cookie.
OPEN_PATHS = frozenset({"/metrics", "/healthz", "/readyz", "/review/login", "/review/logout", "/api/v1/openapi.json"})
OPEN_PREFIXES = ("/review/static/",)  # the review page's stylesheet: no trace content


def health_routes(render: Render, readiness: Readiness) -> list[web.RouteDef]:
    """/metrics serves what `render` returns; /readyz is 200 when every check of `readiness()` holds."""

    async def metrics(request: web.Request) -> web.Response:
        body, content_type = render(request.headers.get("Accept"))
        return web.Response(body=body, headers={"Content-Type": content_type})

    async def healthz(request: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def readyz(request: web.Request) -> web.Response:
        checks = dict(readiness())
        status = 200 if all(checks.values()) else 503
        return web.Response(status=status, body=json.dumps(checks).encode(), content_type="application/json")

    return [web.get("/metrics", metrics), web.get("/healthz", healthz), web.get("/readyz", readyz)]
