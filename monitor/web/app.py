"""The metrics port as an aiohttp application: open health and metrics, everything else behind the token."""

from __future__ import annotations

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from monitor.auth import SESSION_COOKIE, bearer_authorized, session_authorized
from monitor.config.review import ReviewConfig
from monitor.results.review_models import ReviewReader
from monitor.results.store import ResultStore
from monitor.web.health import OPEN_PATHS, OPEN_PREFIXES, Readiness, Render, health_routes
from monitor.web.pages import EvaluatorsInfo, login_redirect, review_headers, review_page_routes, wants_login_page
from monitor.web.review import review_routes

MAX_BODY_BYTES = 64 * 1024  # the API takes no uploads
NOT_FOUND = "not found: try /metrics, /healthz, /readyz, /api/failing\n"


def require_token(token: str | None) -> Middleware:
    """Deny by default: every path but the open ones needs `Authorization: Bearer <token>` when one is set, or
    the review page's session cookie (set by its login form, monitor/auth.py)."""

    def authorized(request: web.Request) -> bool:
        path = request.path
        if path in OPEN_PATHS or path.startswith(OPEN_PREFIXES):
            return True
        return bearer_authorized(request.headers.get("Authorization"), token) or (
            token is not None and session_authorized(request.cookies.get(SESSION_COOKIE), token)
        )

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        if not authorized(request):
            if wants_login_page(request):  # a browser on /review without a session: the login form
                return login_redirect(request)
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
    render: Render,
    readiness: Readiness,
    store: ResultStore | None,
    token: str | None,
    *,
    reader: ReviewReader | None = None,
    evaluators_info: EvaluatorsInfo = None,
    review: ReviewConfig | None = None,
) -> web.Application:
    """The metrics port: what it serves is passed in (it reads, never drives, the engine). The review page
    (/review) reads `reader` (None: it answers 503 "review unavailable")."""
    app = web.Application(client_max_size=MAX_BODY_BYTES, middlewares=[require_token(token)])
    app.add_routes(
        [
            *health_routes(render, readiness),
            *review_routes(store),
            *review_page_routes(reader, evaluators_info, review, token),
        ]
    )
    app.on_response_prepare.append(review_headers)  # CSP, nosniff, no-referrer, no-store on every /review* answer
    return app
