"""The metrics port as an aiohttp application: open health and metrics, trace content as access.py allows."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiohttp import web
from aiohttp.typedefs import Handler

from monitor.config.drift import DriftConfig
from monitor.config.review import ReviewConfig
from monitor.review.models import ReviewReader
from monitor.review.service import RESOLVE_AFTER, STORE_DISABLED
from monitor.web.access import Access, access_control
from monitor.web.api_failing import api_failing_routes
from monitor.web.api_v1 import ComparisonsInfo, EvaluatorsInfo, api_error_response, api_v1_routes
from monitor.web.changes import ChangesSource
from monitor.web.csrf import SAME_SITE
from monitor.web.explain_info import ExplainSource
from monitor.web.health import Readiness, Render, health_routes
from monitor.web.pages import login_redirect, review_headers, review_page_routes, wants_login_page
from monitor.web.pages.layout import error_page, is_review_path
from monitor.web.review_writer import ReviewWriter

if TYPE_CHECKING:
    from monitor.review.queue import ReviewQueue
    from monitor.web.review_writer import ReviewWriter

MAX_BODY_BYTES = 64 * 1024  # the API takes no uploads
NOT_FOUND = "not found: try /metrics, /healthz, /readyz, /api/v1/openapi.json\n"
API_NOT_FOUND = "not found: the review API's paths are listed in /api/v1/openapi.json"


def refusal_answer(request: web.Request, status: int, message: str, headers: dict[str, str]) -> web.StreamResponse:
    """An auth refusal as the path's clients read it: JSON under /api/v1, the login form for a browser without a
    session on /review (401), an HTML page elsewhere under /review, text otherwise. A form posted to /review from
    another site (which carries no session: its cookie is SameSite=Strict) is refused as cross-site (403)."""
    if status == 401 and wants_login_page(request):
        return login_redirect(request)
    if status == 401 and request.method == "POST" and is_review_path(request.path) and cross_site(request):
        status, message, headers = 403, "this form only accepts posts from this site", {}  # a cross-site form
    answer = api_error_response(request, status, message, headers)
    if answer is not None:
        return answer
    if is_review_path(request.path) and status != 401:
        page = error_page(None, status, "too many attempts" if status == 429 else "forbidden", message)
        page.headers.update(headers)
        return page
    return web.Response(status=status, text=message + "\n", headers=headers)


@web.middleware
async def api_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Under /api/v1 errors are JSON (api_error_response); elsewhere they stay text."""
    try:
        return await handler(request)
    except web.HTTPNotFound:
        answer = api_error_response(request, 404, API_NOT_FOUND)
        return answer if answer is not None else web.Response(status=404, text=NOT_FOUND)
    except web.HTTPMethodNotAllowed as exc:
        allow = {"Allow": ", ".join(sorted(exc.allowed_methods))}
        allowed = " or ".join(sorted(m for m in exc.allowed_methods if m != "HEAD"))
        answer = api_error_response(request, 405, f"method {request.method} not allowed: {allowed} only", allow)
        if answer is None:
            raise
        return answer


def cross_site(request: web.BaseRequest) -> bool:
    """The browser says the request came from another site (clients other than browsers send no Sec-Fetch-Site)."""
    return request.headers.get("Sec-Fetch-Site", "none") not in SAME_SITE


async def nosniff(request: web.BaseRequest, response: web.StreamResponse) -> None:
    """on_response_prepare: no answer of this port is content-sniffed; /api answers (trace content) are not
    cached either."""
    response.headers["X-Content-Type-Options"] = "nosniff"
    if request.path.startswith("/api/"):
        response.headers.setdefault("Cache-Control", "no-store")


def _application(access: Access) -> web.Application:
    middlewares = [access_control(access, refusal_answer), api_errors]
    return web.Application(client_max_size=MAX_BODY_BYTES, middlewares=middlewares)


def build_api_app(
    render: Render,
    readiness: Readiness,
    token: str | None,
    *,
    reader: ReviewReader | None = None,
    evaluators_info: EvaluatorsInfo | None = None,
    unavailable: str = STORE_DISABLED,
    review: ReviewConfig | None = None,
    comparisons_info: ComparisonsInfo | None = None,
    access: Access | None = None,
    resolve_after: float = RESOLVE_AFTER,
    queue: ReviewQueue | None = None,
    reviewing: ReviewWriter | None = None,
    changes: ChangesSource | None = None,
    drift: DriftConfig | None = None,
    explainer: ExplainSource | None = None,
    explain_unavailable: str | None = None,
) -> web.Application:
    """The metrics port: what it serves is passed in (it reads, never drives, the engine). `reader` and
    `evaluators_info` serve /api/v1 (api_v1.py) and /review (pages/); while `reader` is None both answer 503 "review
    unavailable" with `unavailable` as the reason. `comparisons_info`: the live variant comparisons (for
    /api/v1/comparisons and /review/canary). `access`: who reads trace content (default: the token, else loopback
    clients only; access.py). `resolve_after`: signatures.resolve_after. `queue`: /review/queue; `reviewing` writes
    reviewers' verdicts (None: nothing can be reviewed). `changes`, `drift`: drift's latest report (None before the
    first; `changes` None: drift is not run) and its config section, for /api/v1/changes and /review/changes.
    `explainer`: what sets a slice of traces apart (monitor.explain.service.Explainer), for /api/v1/explain, the
    review's "What's different" panels and /review/explain; None (explain.enabled: false, or no store): those
    answer "explain unavailable: " with `explain_unavailable` (default: explain_info.DISABLED) as the reason."""
    access = access if access is not None else Access(token)
    app = _application(access)
    # what both the API and the pages read, under the same names
    shared: dict[str, Any] = dict(access=access, resolve_after=resolve_after, reviewing=reviewing, changes=changes)
    shared |= dict(drift=drift, explainer=explainer, explain_unavailable=explain_unavailable)
    app.add_routes(
        [
            *health_routes(render, readiness),
            *api_failing_routes(),
            *api_v1_routes(
                reader, evaluators_info, unavailable=unavailable, comparisons_info=comparisons_info, **shared
            ),
            *review_page_routes(
                reader,
                evaluators_info,
                review,
                access.token,
                unavailable_reason=unavailable,
                comparisons=comparisons_info,
                queue=queue,
                **shared,
            ),
        ]
    )
    app.on_response_prepare.append(review_headers)  # CSP, nosniff, no-referrer, no-store on every /review* answer
    app.on_response_prepare.append(nosniff)
    return app
