"""The metrics port as an aiohttp application: open health and metrics, everything else behind the token."""

from __future__ import annotations

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from monitor.auth import bearer_authorized
from monitor.results.store import ResultStore
from monitor.web.health import OPEN_PATHS, Readiness, Render, health_routes
from monitor.web.review import review_routes

MAX_BODY_BYTES = 64 * 1024  # the API takes no uploads
NOT_FOUND = "not found: try /metrics, /healthz, /readyz, /api/failing\n"


def require_token(token: str | None) -> Middleware:
    """Deny by default: every path but the open ones needs `Authorization: Bearer <token>` when one is set."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path not in OPEN_PATHS and not bearer_authorized(request.headers.get("Authorization"), token):
            return web.Response(
                status=401,
                text="missing or invalid bearer token\n",
                headers={"WWW-Authenticate": 'Bearer realm="agent-monitor"'},
            )
        try:
            return await handler(request)
        except web.HTTPNotFound:
            return web.Response(status=404, text=NOT_FOUND)

    return middleware


def build_api_app(
    render: Render, readiness: Readiness, store: ResultStore | None, token: str | None
) -> web.Application:
    """The metrics port: what it serves is passed in (it reads, never drives, the engine)."""
    app = web.Application(client_max_size=MAX_BODY_BYTES, middlewares=[require_token(token)])
    app.add_routes([*health_routes(render, readiness), *review_routes(store)])
    return app
