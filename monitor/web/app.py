"""The metrics port as an aiohttp application: open health and metrics, everything else behind the token."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from aiohttp import web
from aiohttp.typedefs import Handler

from ..ingest import bearer_authorized
from .health import OPEN_PATHS, health_routes
from .review import review_routes

if TYPE_CHECKING:
    from ..daemon import Daemon

MAX_BODY_BYTES = 64 * 1024  # the API takes no uploads
NOT_FOUND = "not found: try /metrics, /healthz, /readyz, /api/failing\n"

Middleware = Callable[[web.Request, Handler], Awaitable[web.StreamResponse]]


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


def build_api_app(daemon: Daemon, token: str | None) -> web.Application:
    app = web.Application(client_max_size=MAX_BODY_BYTES, middlewares=[require_token(token)])
    app.add_routes([*health_routes(daemon), *review_routes(daemon)])
    return app
