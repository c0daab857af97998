"""The review pages' frame: what every page shares (head, navigation, security headers) and the error pages."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlencode

from aiohttp import web

from monitor.config.review import ReviewConfig
from monitor.review.models import EvaluatorStatus, ReviewReader, VariantComparison
from monitor.web.access import Access
from monitor.web.html import Child, Html, document, el

if TYPE_CHECKING:
    from monitor.web.explain_info import ExplainSource
    from monitor.web.review_writer import ReviewWriter

ROOT = "/review"  # the Failures page (failure signatures by impact)
RESULTS = f"{ROOT}/results"
SIGNATURES = f"{ROOT}/signatures"
QUEUE = f"{ROOT}/queue"  # the review queue (pages/queue.py): the one page with a script (its keys)
STATIC_PREFIX = "/review/static/"
STYLESHEET = "/review/static/review.css"
LOGIN = "/review/login"
LOGOUT = "/review/logout"
CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
QUEUE_CSP = f"{CSP}; script-src 'self'"
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}

EvaluatorSource = Callable[[], Sequence[EvaluatorStatus]]
ComparisonSource = Callable[[], Sequence[VariantComparison]]


@dataclass(frozen=True)
class ReviewSite:
    """What the pages read: the store (None when there is none), the configured evaluators, config and token."""

    reader: ReviewReader | None
    evaluators: EvaluatorSource
    config: ReviewConfig
    token: str | None
    unavailable: str = "the result store is disabled (store.enabled: false) or could not be opened"
    comparisons: ComparisonSource | None = None  # the live variant comparisons (None: the daemon has none)
    access: Access | None = None  # the port's policy: sessions, guess limiter, who reads without a token
    resolve_after: float = 86400.0  # signatures.resolve_after: a failure signature's status
    reviewing: ReviewWriter | None = None  # writes the page's reviews (None: no writer, no review forms)
    explainer: ExplainSource | None = None  # the "What's different" panels (None: they say it is unavailable)
    explain_unavailable: str | None = None  # why there is no explainer (None: explain_info.DISABLED)

    def evaluator_names(self) -> list[str]:
        return sorted({info.name for info in self.evaluators()})


def is_review_path(path: str) -> bool:
    return path == ROOT or path.startswith(ROOT + "/")


async def review_headers(request: web.BaseRequest, response: web.StreamResponse) -> None:
    """on_response_prepare: every /review* response (error pages and the auth middleware's included) gets the
    strict CSP (the queue's also allows this site's scripts), nosniff and no-referrer; all but the static files
    also `Cache-Control: no-store`."""
    if not is_review_path(request.path):
        return
    response.headers.update(SECURITY_HEADERS)
    if request.path == QUEUE:
        response.headers["Content-Security-Policy"] = QUEUE_CSP
    if request.path.startswith(STATIC_PREFIX):
        response.headers.setdefault("Cache-Control", "max-age=300")
    else:
        response.headers["Cache-Control"] = "no-store"


def link(path: str, params: Mapping[str, str | None]) -> str:
    """`path?query` from the non-empty params, in their order."""
    query = urlencode([(k, v) for k, v in params.items() if v])
    return f"{path}?{query}" if query else path


def pager(
    path: str,
    params: Mapping[str, str | None],
    query: Mapping[str, str],
    next_cursor: str | None,
    labels: tuple[str, str],
) -> list[Child]:
    """Links back to the first page (when on a later one) and on to the next (when there is one): `labels`."""
    links: list[Child] = []
    if query.get("cursor"):
        links.append(el("a", labels[0], href=link(path, params)))
    if next_cursor:
        following = link(path, {**params, "limit": query.get("limit"), "cursor": next_cursor})
        links.append(el("a", labels[1], href=following, rel="next"))
    return links


def _nav(site: ReviewSite, active: str) -> Html:
    items = [
        el("a", "failures", href=ROOT, class_="active" if active == "failures" else None),
        el("a", "results", href=RESULTS, class_="active" if active == "results" else None),
        el("a", "breakdown", href=f"{ROOT}/breakdown", class_="active" if active == "breakdown" else None),
        el("a", "sessions", href=f"{ROOT}/sessions", class_="active" if active == "sessions" else None),
        el("a", "changes", href=f"{ROOT}/changes", class_="active" if active == "changes" else None),
        el("a", "queue", href=QUEUE, class_="active" if active == "queue" else None),
    ]
    if site.comparisons is not None:
        items.append(el("a", "canary", href=f"{ROOT}/canary", class_="active" if active == "canary" else None))
    if site.token:
        session: Child = el("form", el("button", "log out", type="submit"), method="post", action=LOGOUT)
    elif site.access is not None and site.access.unauthenticated == "any":
        session = el("span", "no token configured: open to anyone who reaches this port", class_="warn")
    else:
        session = el("span", "no token configured: open to clients on this host only", class_="warn")
    return el("header", el("strong", "agent-monitor review"), el("nav", items), session, class_="top")


def shell(site: ReviewSite | None, title: str, main: Child, active: str = "") -> Html:
    """A whole page: head with the stylesheet, navigation (without a site: none, as on the login page), main."""
    head = [
        el("meta", charset="utf-8"),
        el("meta", name="viewport", content="width=device-width, initial-scale=1"),
        el("meta", name="color-scheme", content="dark light"),
        el("title", f"{title} · agent-monitor"),
        el("link", rel="stylesheet", href=STYLESHEET),
    ]
    nav = _nav(site, active) if site is not None else None
    return document(head, [nav, el("main", main)])


def respond(page: Html, status: int = 200) -> web.Response:
    """The page as an HTML response (lone surrogates from trace text are replaced, never an encoding error)."""
    return web.Response(
        status=status, body=str(page).encode("utf-8", "replace"), content_type="text/html", charset="utf-8"
    )


def error_page(site: ReviewSite | None, status: int, title: str, message: Child) -> web.Response:
    main = [el("h1", title), el("p", message, class_="problem"), el("p", el("a", "back to failures", href=ROOT))]
    return respond(shell(site, title, main), status)


def unavailable(site: ReviewSite, reason: str | None = None) -> web.Response:
    """503: the store cannot answer (disabled, or an error reading it)."""
    return error_page(site, 503, "review unavailable", reason or site.unavailable)
