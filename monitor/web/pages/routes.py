"""The /review routes: parse the query, ask the reader (in a worker thread: SQLite blocks), render the page.

Every failure is a page, never a traceback: 400 for a malformed parameter, trace or session id, 404 for an
unknown trace or session, 503 ("review unavailable", with the reason) when there is no reader or reading it fails.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, ParamSpec, TypeVar, cast

from aiohttp import web

from monitor.config.drift import DriftConfig
from monitor.config.review import MAX_PAGE_SIZE, ReviewConfig
from monitor.logutil import RateLimitedLogger
from monitor.review.models import BreakdownBy, BreakdownSort, EvaluatorStatus, ReviewReader, VariantComparison
from monitor.review.service import RESOLVE_AFTER
from monitor.review.session_models import MAX_SESSION_ID_CHARS, SessionFilter
from monitor.review.signature_models import DEFAULT_RANGE, SignatureFilter
from monitor.web.access import Access
from monitor.web.changes import ChangesSource
from monitor.web.explain_info import ExplainSource
from monitor.web.html import Html, el
from monitor.web.page_params import (
    QueryError,
    breakdown_by,
    breakdown_sort,
    limit_param,
    result_filter,
    text_param,
    time_param,
)
from monitor.web.pages.breakdown import PAGE as BREAKDOWN
from monitor.web.pages.breakdown import breakdown_page
from monitor.web.pages.canary import PAGE as CANARY
from monitor.web.pages.canary import canary_page
from monitor.web.pages.changes import changes_routes
from monitor.web.pages.explain import explain_routes, failures_panel, signature_panel
from monitor.web.pages.failures import candidate_section, failures_page, signature_page, state
from monitor.web.pages.layout import (
    RESULTS,
    ROOT,
    SIGNATURES,
    STYLESHEET,
    ComparisonSource,
    EvaluatorSource,
    ReviewSite,
    error_page,
    respond,
    unavailable,
)
from monitor.web.pages.login import login_routes
from monitor.web.pages.queue import queue_routes
from monitor.web.pages.results import VERDICTS, results_page
from monitor.web.pages.review_forms import Reviews, forms_for, read_reviews, review_routes
from monitor.web.pages.sessions import SESSIONS, session_href, session_page, sessions_page
from monitor.web.pages.trace import trace_page

if TYPE_CHECKING:
    from monitor.review.queue import ReviewQueue
    from monitor.web.review_writer import ReviewWriter

log = logging.getLogger(__name__)
_problems = RateLimitedLogger(log, per_minute=6)
TRACE_ID = re.compile(r"[0-9a-fA-F]{32}")
SIGNATURE_ID = re.compile(r"[0-9a-fA-F]{16}")
RESULTS_ONLY = ("outcome", "model", "trace_id")  # parameters only the results list takes
EvaluatorsInfo = EvaluatorSource | Sequence[str] | None
P = ParamSpec("P")
T = TypeVar("T")


class StoreProblem(Exception):
    """Reading the store failed; the message is shown on the 503 page."""


class BadCursor(Exception):
    """The reader refused the cursor (ValueError from `results` with a cursor)."""


@lru_cache(maxsize=1)
def stylesheet() -> bytes:
    return resources.files("monitor.web.pages").joinpath("static/review.css").read_bytes()


def signature_filter(query: Mapping[str, str], keys: Sequence[str]) -> SignatureFilter:
    """The Failures page's filter (`keys`) and range: `since` 24 hours before `until` (now) when not given."""
    now = time.time()
    since, until = time_param(query, "since", now), time_param(query, "until", now)
    until = now if until is None else until
    since = until - DEFAULT_RANGE if since is None else since
    if since >= until:
        raise QueryError("since must be before until")
    values = {key: text_param(query, key) for key in keys}
    return SignatureFilter(since=since, until=until, **values)


def evaluator_source(evaluators: EvaluatorsInfo) -> EvaluatorSource:
    """A callable of EvaluatorStatus from the daemon's (live figures), or from bare evaluator names."""
    if evaluators is None:
        return list
    if callable(evaluators):
        return evaluators
    infos = [EvaluatorStatus(name=name, kind="", level="") for name in evaluators]
    return lambda: infos


async def _read(call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """`call` in a worker thread; a failure → StoreProblem (the ValueError of a cursor given → BadCursor)."""
    try:
        return await asyncio.to_thread(call, *args, **kwargs)
    except ValueError as exc:
        if kwargs.get("cursor") is not None:
            raise BadCursor(str(exc)) from exc
        _problems.warning("read", "review page: reading the result store failed: %r", exc)
        raise StoreProblem(f"reading the result store failed: {exc}") from exc
    except Exception as exc:
        _problems.warning("read", "review page: reading the result store failed: %r", exc)
        raise StoreProblem(f"reading the result store failed: {type(exc).__name__}: {exc}") from exc


async def _reviews(reader: ReviewReader, trace_ids: list[str], history: bool) -> Reviews:
    """The reviews of the page's results; a failure to read them is a note on the page, not a failed page."""
    try:
        return await _read(read_reviews, reader, trace_ids, history)
    except StoreProblem as exc:
        return Reviews(problem=str(exc))


def _infos(site: ReviewSite) -> Sequence[EvaluatorStatus]:
    try:
        return site.evaluators()
    except Exception as exc:  # live figures are a nicety: the page works without them
        _problems.warning("evaluators", "review page: listing the evaluators failed: %r", exc)
        return []


Render = Callable[[web.Request, ReviewReader], Awaitable[web.Response]]


class _Pages:
    """The handlers of the review page over one site: the data pages (results, trace, breakdown) read the
    store through `guarded`; the canary page reads the live comparisons."""

    def __init__(self, site: ReviewSite) -> None:
        self.site = site

    def guarded(self, render: Render) -> Callable[[web.Request], Awaitable[web.Response]]:
        """`render` with the site's reader; no reader, a bad parameter or a failed read answer as a page."""
        site = self.site

        async def handler(request: web.Request) -> web.Response:
            if site.reader is None:
                return unavailable(site)
            try:
                return await render(request, site.reader)
            except QueryError as exc:
                return error_page(site, 400, "bad request", str(exc))
            except BadCursor:
                return error_page(site, 400, "bad request", "cursor: not one this store issued")
            except StoreProblem as exc:
                return unavailable(site, str(exc))

        return handler

    async def results(self, request: web.Request, reader: ReviewReader) -> web.Response:
        query = request.query
        where = result_filter(query, default_outcome="fail")
        limit = limit_param(query, self.site.config.page_size, MAX_PAGE_SIZE)
        cursor = text_param(query, "cursor")
        page = await _read(reader.results, where, limit, cursor=cursor)
        reviews = await _reviews(reader, [item.trace_id for item in page.items], history=False)
        forms = forms_for(self.site, request, str(request.rel_url))
        return respond(results_page(self.site, query, where, page, _infos(self.site), reviews, forms))

    async def failures(self, request: web.Request, reader: ReviewReader) -> web.Response:
        query = request.query
        if any(key in query for key in RESULTS_ONLY):  # a results link from before the Failures page
            return web.Response(status=302, headers={"Location": f"{RESULTS}?{request.rel_url.raw_query_string}"})
        where = signature_filter(query, ("evaluator", "service", "agent", "variant"))
        limit = limit_param(query, self.site.config.page_size, MAX_PAGE_SIZE)
        cursor = text_param(query, "cursor")
        resolve_after = self.site.resolve_after
        reading = _read(reader.signatures, where, limit, cursor=cursor, now=time.time(), resolve_after=resolve_after)
        page, panel = await asyncio.gather(reading, failures_panel(self.site, where, state(query)))
        names = sorted({info.name for info in _infos(self.site)})
        return respond(failures_page(self.site, query, page, names, panel))

    async def signature(self, request: web.Request, reader: ReviewReader) -> web.Response:
        ident = request.match_info["signature_id"]
        if not SIGNATURE_ID.fullmatch(ident):
            return error_page(self.site, 400, "bad signature id", "A signature id is 16 hexadecimal digits.")
        query = request.query
        where = signature_filter(query, ())
        limit = limit_param(query, self.site.config.page_size, MAX_PAGE_SIZE)
        cursor = text_param(query, "cursor")
        detail = await _read(
            reader.signature, ident.lower(), where, limit, cursor, time.time(), self.site.resolve_after
        )
        if detail is None:
            return error_page(
                self.site, 404, "signature not found", f"No failure signature {ident.lower()} in the store."
            )
        panel = await signature_panel(self.site, detail.signature, where, state(query))
        return respond(signature_page(self.site, query, detail, panel))

    async def trace(self, request: web.Request, reader: ReviewReader) -> web.Response:
        trace_id = request.match_info["trace_id"]
        if not TRACE_ID.fullmatch(trace_id):
            return error_page(self.site, 400, "bad trace id", "A trace id is 32 hexadecimal digits.")
        detail = await _read(reader.trace, trace_id.lower())
        if detail is None:
            message = f"No trace {trace_id.lower()} in the store: never stored, or older than store.retention."
            return error_page(self.site, 404, "trace not found", message)
        try:  # the conversation it is a turn of: a link, so a failure to find it does not fail the page
            session_id = await _read(reader.session_of_trace, trace_id.lower())
        except StoreProblem:
            session_id = None
        reviews = await _reviews(reader, [trace_id.lower()], history=True)
        forms = forms_for(self.site, request, f"{request.rel_url.path}#{VERDICTS}")
        return respond(trace_page(self.site, detail, session_id, reviews, forms))

    async def sessions(self, request: web.Request, reader: ReviewReader) -> web.Response:
        query = request.query
        now = time.time()
        since, until = time_param(query, "since", now), time_param(query, "until", now)
        if since is not None and until is not None and since >= until:
            raise QueryError("since must be before until")
        failing = (text_param(query, "failing") or "").lower() in ("true", "1", "yes", "on")
        where = SessionFilter(
            service=text_param(query, "service"),
            evaluator=text_param(query, "evaluator"),
            failing=failing,
            since=since,
            until=until,
        )
        limit = limit_param(query, self.site.config.page_size, MAX_PAGE_SIZE)
        page = await _read(reader.sessions, where, limit, cursor=text_param(query, "cursor"))
        return respond(sessions_page(self.site, query, page, self.site.evaluator_names()))

    async def session(self, request: web.Request, reader: ReviewReader) -> web.Response:
        ident = request.match_info["session_id"]
        if len(ident) > MAX_SESSION_ID_CHARS:
            return error_page(
                self.site, 400, "bad session id", f"A session id is at most {MAX_SESSION_ID_CHARS} characters."
            )
        detail = await _read(reader.session, ident)
        if detail is None:
            message = f"No conversation {ident!r} in the store: not completed yet, or older than store.retention."
            return error_page(self.site, 404, "session not found", message)
        # the session-level results' rows are under their traces (the last turn's): their reviews in one read
        reviews = await _reviews(reader, [v.trace_id for v in detail.results], history=True)
        forms = forms_for(self.site, request, session_href(detail.session.session_id))
        return respond(session_page(self.site, detail, reviews, forms))

    async def breakdown(self, request: web.Request, reader: ReviewReader) -> web.Response:
        query = request.query
        by = cast(BreakdownBy, breakdown_by(query))
        sort = cast(BreakdownSort, breakdown_sort(query))
        evaluator, variant, now = text_param(query, "evaluator"), text_param(query, "variant"), time.time()
        since, until = time_param(query, "since", now), time_param(query, "until", now)
        if since is not None and until is not None and since >= until:
            raise QueryError("since must be before until")
        result = await _read(reader.breakdown, by, evaluator, since, until, variant, sort)
        params = {"evaluator": evaluator, "variant": variant, "sort": sort}
        params |= {"since": text_param(query, "since"), "until": text_param(query, "until")}
        return respond(breakdown_page(self.site, params, result))

    async def canary(self, request: web.Request) -> web.Response:
        """Live figures from the metrics, not the store: shown even while the store is unavailable."""
        site = self.site
        try:
            found = site.comparisons() if site.comparisons is not None else []
        except Exception as exc:
            _problems.warning("canary", "review page: computing the variant comparisons failed: %r", exc)
            return error_page(site, 500, "canary unavailable", "Computing the comparisons failed (see the log).")
        return respond(canary_page(site, found, await self._new_modes(found)))

    async def _new_modes(self, comparisons: Sequence[VariantComparison]) -> list[Html]:
        """Each candidate's new failure modes over its comparison's window, from the store; a note when the store
        cannot answer (the live table is shown all the same)."""
        reader, now, sections = self.site.reader, time.time(), []
        seen: set[tuple[str, str, float]] = set()
        for c in comparisons:
            key = (c.candidate.variant, c.baseline.variant, c.window)
            if key in seen:
                continue
            seen.add(key)
            if reader is None:
                sections.append(el("p", "New failure modes: the result store is unavailable.", class_="muted"))
                break
            try:
                found = await _read(reader.candidate_signatures, key[0], key[1], now - c.window, now)
            except StoreProblem as exc:
                sections.append(el("p", f"New failure modes: {exc}", class_="problem"))
                break
            sections.append(candidate_section(found))
        return sections

    async def not_found(self, request: web.Request) -> web.Response:
        return error_page(self.site, 404, "not found", "No such review page.")


async def _css(request: web.Request) -> web.Response:
    return web.Response(body=stylesheet(), content_type="text/css", charset="utf-8")


async def _slash(request: web.Request) -> web.Response:
    """/review/ → /review, the query kept."""
    query = request.rel_url.raw_query_string
    return web.Response(status=308, headers={"Location": ROOT + (f"?{query}" if query else "")})


def review_page_routes(
    reader: ReviewReader | None,
    evaluators_info: EvaluatorsInfo,
    config: ReviewConfig | None,
    token: str | None,
    unavailable_reason: str | None = None,
    comparisons: ComparisonSource | None = None,
    access: Access | None = None,
    resolve_after: float = RESOLVE_AFTER,
    queue: ReviewQueue | None = None,
    reviewing: ReviewWriter | None = None,
    changes: ChangesSource | None = None,
    drift: DriftConfig | None = None,
    explainer: ExplainSource | None = None,
    explain_unavailable: str | None = None,
) -> list[web.RouteDef]:
    """The review page's routes. `reader` None: every data page is a 503 saying `unavailable_reason`. `access`:
    the port's policy (its sessions and guess limiter; default: one of `token`'s own). `queue`, `reviewing`: the
    review queue (/review/queue) and the review writer its forms post to (None: the queue page is a 503).
    `changes`, `drift`: drift's latest report and config (/review/changes; None: its empty state says drift is off).
    `explainer`: the "What's different" panels and /review/explain (None: they say why not: `explain_unavailable`).
    Register `layout.review_headers` as the app's on_response_prepare too (build_api_app does)."""
    site = ReviewSite(
        reader,
        evaluator_source(evaluators_info),
        config or ReviewConfig(),
        token,
        comparisons=comparisons,
        access=access if access is not None else Access(token),
        resolve_after=resolve_after,
        reviewing=reviewing,
        explainer=explainer,
        explain_unavailable=explain_unavailable,
    )
    if unavailable_reason:
        site = replace(site, unavailable=unavailable_reason)
    pages = _Pages(site)
    return [
        web.get(ROOT, pages.guarded(pages.failures)),
        web.get(RESULTS, pages.guarded(pages.results)),
        web.get(f"{SIGNATURES}/{{signature_id}}", pages.guarded(pages.signature)),
        web.get(f"{ROOT}/", _slash),
        web.get(f"{ROOT}/traces/{{trace_id}}", pages.guarded(pages.trace)),
        web.get(BREAKDOWN, pages.guarded(pages.breakdown)),
        web.get(SESSIONS, pages.guarded(pages.sessions)),
        web.get(f"{SESSIONS}/{{session_id}}", pages.guarded(pages.session)),
        web.get(CANARY, pages.canary),
        web.get(STYLESHEET, _css),
        *login_routes(site),
        *review_routes(site),
        *queue_routes(site, queue, reviewing),
        *changes_routes(site, changes, drift),
        *explain_routes(site),
        web.get(f"{ROOT}/{{tail:.*}}", pages.not_found),
    ]
