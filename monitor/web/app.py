"""The metrics port as an aiohttp application: open health and metrics, everything else behind the token."""

from __future__ import annotations

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from monitor.auth import SESSION_COOKIE, bearer_authorized, session_authorized
from monitor.config.review import ReviewConfig
from monitor.results.review_models import ReviewReader
from monitor.results.review_service import STORE_DISABLED
from monitor.results.writer import QueuedResultStore
from monitor.web.api_v1 import ComparisonsInfo, EvaluatorsInfo, api_error_response, api_v1_routes
from monitor.web.health import OPEN_PATHS, OPEN_PREFIXES, Readiness, Render, health_routes
from monitor.web.pages import login_redirect, review_headers, review_page_routes, wants_login_page
from monitor.web.review import review_routes

MAX_BODY_BYTES = 64 * 1024  # the API takes no uploads
NOT_FOUND = "not found: try /metrics, /healthz, /readyz, /api/v1/openapi.json\n"
UNAUTHORIZED = "missing or invalid bearer token"
API_NOT_FOUND = "not found: the review API's paths are listed in /api/v1/openapi.json"


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
        # Under /api/v1 errors are JSON (api_error_response); elsewhere they stay text.
        if not authorized(request):
            if wants_login_page(request):  # a browser on /review without a session: the login form
                return login_redirect(request)
            challenge = {"WWW-Authenticate": 'Bearer realm="agent-monitor"'}
            answer = api_error_response(request, 401, UNAUTHORIZED, challenge)
            return (
                answer if answer is not None else web.Response(status=401, text=UNAUTHORIZED + "\n", headers=challenge)
            )
        try:
            return await handler(request)
        except web.HTTPNotFound:
            answer = api_error_response(request, 404, API_NOT_FOUND)
            return answer if answer is not None else web.Response(status=404, text=NOT_FOUND)
        except web.HTTPMethodNotAllowed as exc:
            allow = {"Allow": ", ".join(sorted(exc.allowed_methods))}
            answer = api_error_response(request, 405, f"method {request.method} not allowed: GET only", allow)
            if answer is None:
                raise
            return answer

    return middleware


def build_api_app(
    render: Render,
    readiness: Readiness,
    store: QueuedResultStore | None,
    token: str | None,
    *,
    reader: ReviewReader | None = None,
    evaluators_info: EvaluatorsInfo | None = None,
    unavailable: str = STORE_DISABLED,
    review: ReviewConfig | None = None,
    comparisons_info: ComparisonsInfo | None = None,
) -> web.Application:
    """The metrics port: what it serves is passed in (it reads, never drives, the engine). `reader` and
    `evaluators_info` serve /api/v1 (api_v1.py) and the review page /review (pages/); while `reader` is None both
    answer 503 "review unavailable" with `unavailable` as the reason. `comparisons_info`: the live variant
    comparisons, for /api/v1/comparisons and /review/canary."""
    app = web.Application(client_max_size=MAX_BODY_BYTES, middlewares=[require_token(token)])
    app.add_routes(
        [
            *health_routes(render, readiness),
            *review_routes(store),
            *api_v1_routes(reader, evaluators_info, unavailable=unavailable, comparisons_info=comparisons_info),
            *review_page_routes(
                reader, evaluators_info, review, token, unavailable_reason=unavailable, comparisons=comparisons_info
            ),
        ]
    )
    app.on_response_prepare.append(review_headers)  # CSP, nosniff, no-referrer, no-store on every /review* answer
    return app
