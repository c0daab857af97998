"""The "What's different" panel (issue 42): what sets a slice of traces apart from its reference, computed by the
explainer on a worker thread: on the Failures page (its evaluator's failures over the page's filter), on every
signature page (the signature's traces against its evaluator's other verdicts), and full width on
GET /review/explain (the API's parameters: where the Changes page's and the alerts' links land).

The panel is a table of factors (the value or pair of values, each a link to its failing results when the
results list filters by that dimension; slice and reference shares, lift, coverage, q-value) under a headline
for the top factor. An explainer that fails or is missing is a message in the panel: the page around it renders.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass

from aiohttp import web

import monitor.web.pages.fmt as fmt
from monitor.explain.model import ExplainQuery, Explanation, Factor
from monitor.explain.wording import (
    TRUNCATED,
    counts_text,
    fdr_text,
    headline,
    lift_text,
    nothing_text,
    q_text,
    share_text,
    values_text,
)
from monitor.logutil import RateLimitedLogger
from monitor.review.api_params import BadRequest, ReviewError
from monitor.review.signature_models import DEFAULT_RANGE, SignatureFilter, SignatureItem
from monitor.web.changes import duration
from monitor.web.explain_info import EXPLAIN_PARAMS, explain_query, unavailable_message
from monitor.web.html import Child, Html, el, join
from monitor.web.openapi import PREFIX
from monitor.web.pages.layout import RESULTS, ROOT, ReviewSite, error_page, link, respond, shell
from monitor.web.pages.results import field, select, text_input, time_fields

log = logging.getLogger(__name__)
_problems = RateLimitedLogger(log, per_minute=6)
PAGE = f"{ROOT}/explain"
TITLE = "What's different"
FILTERED = ("service", "agent", "model", "variant")  # dimensions the results list filters by
HEADINGS = ("value", "slice share", "reference share", "lift", "coverage", "q-value")
TEXT_PARAMS = ("evaluator", "service", "agent", "variant")
HIDDEN_PARAMS = ("signature", "reference_since", "reference_until")  # carried by the page's form, not edited
MESSAGE_CHARS = 500


@dataclass(frozen=True, slots=True)
class Panel:
    """The panel's markup and the status it stands for (the standalone page answers with it)."""

    html: Html
    status: int = 200


def _since(value: float) -> str:
    return str(math.floor(value))


def _until(value: float) -> str:
    return str(math.ceil(value))


def value_href(found: Explanation, dimension: str, value: str) -> str | None:
    """The failing results of the slice's filter and range with this value; None when no filter takes it."""
    if dimension not in FILTERED:
        return None
    q = found.query
    params = {name: getattr(q, name) for name in TEXT_PARAMS}
    params = {**params, dimension: value, "outcome": "fail", "since": _since(q.since), "until": _until(q.until)}
    return link(RESULTS, params)


def values_cell(found: Explanation, factor: Factor) -> Html:
    parts: list[Child] = []
    for pair in factor.values:
        text = join(el("code", pair.dimension), " = ", pair.value)
        href = value_href(found, pair.dimension, pair.value)
        parts.append(el("a", text, href=href, title="its failing results") if href else text)
    return el("td", join(*parts, sep=el("span", " AND ", class_="muted")), class_="factor")


def _share(share: float, traces: int) -> Html:
    return el("td", share_text(share), el("br"), el("span", f"{traces} traces", class_="muted"), class_="num")


def factor_row(found: Explanation, factor: Factor) -> Html:
    return el(
        "tr",
        values_cell(found, factor),
        _share(factor.slice_share, factor.slice_traces),
        _share(factor.reference_share, factor.reference_traces),
        el("td", lift_text(factor.lift), class_="num"),
        el("td", share_text(factor.coverage), class_="num"),
        el("td", q_text(factor.q_value), class_="num"),
        data_factor=values_text(factor, "="),
    )


def _more(href: str | None) -> Html | None:
    return el("p", el("a", "open full width", href=href), class_="more") if href else None


def explanation_html(found: Explanation, more: str | None = None, heading: bool = True) -> Html:
    """The panel of an answer: the headline and the factors, or why there are none; the counts."""
    tested = f"; {found.tested} tested at {fdr_text(found.fdr)}."
    counts = el("p", counts_text(found), tested, class_="muted explain-counts")
    if found.factors:
        head = el("thead", el("tr", [el("th", h) for h in HEADINGS]))
        rows = el("tbody", [factor_row(found, f) for f in found.factors])
        body: Child = [
            el("p", headline(found), class_="explain-headline"),
            el("table", head, rows, class_="factors"),
        ]
    else:
        body = el("p", nothing_text(found), class_="explain-none")
    return el(
        "section",
        el("h2", TITLE) if heading else None,
        body,
        counts,
        el("p", TRUNCATED, class_="muted") if found.truncated else None,
        _more(more),
        class_="explain",
        id="whats-different",
        data_kind=found.kind,
    )


def message_html(message: Child, more: str | None = None, problem: bool = True, heading: bool = True) -> Html:
    """The panel without an answer: why (unavailable, refused, failed), or what to choose first."""
    return el(
        "section",
        el("h2", TITLE) if heading else None,
        el("p", message, class_="problem" if problem else "muted"),
        _more(more),
        class_="explain",
        id="whats-different",
    )


async def panel(site: ReviewSite, query: ExplainQuery, more: str | None = None, heading: bool = True) -> Panel:
    """The explainer's answer to `query` (on a worker thread) as a panel; a missing or failing explainer is a
    message in it, never an exception."""
    if site.explainer is None:
        return Panel(message_html(unavailable_message(site.explain_unavailable), more, heading=heading), 503)
    try:
        found = await asyncio.to_thread(site.explainer.explain, query)
    except ReviewError as exc:
        return Panel(message_html(fmt.clip(str(exc), MESSAGE_CHARS), more, heading=heading), exc.status)
    except Exception as exc:
        _problems.warning("explain", "review page: explaining a slice failed: %r", exc)
        text = fmt.clip(f"explain failed: {type(exc).__name__}: {exc}", MESSAGE_CHARS)
        return Panel(message_html(text, more, heading=heading), 503)  # the page renders: never a 500
    return Panel(explanation_html(found, more, heading))


def _range(params: Mapping[str, str | None], where: SignatureFilter) -> dict[str, str | None]:
    """The page's range as the standalone page's link carries it: as typed, else the page's default range."""
    since, until = params.get("since"), params.get("until")
    if since is None:
        since = duration(DEFAULT_RANGE) if until is None else _since(where.since)
    return {"since": since, "until": until}


async def failures_panel(site: ReviewSite, where: SignatureFilter, params: Mapping[str, str | None]) -> Html:
    """The Failures page's panel: the chosen evaluator's failures over the page's filter and range."""
    if where.evaluator is None:
        choose = "Choose an evaluator to see what sets its failures apart (model, version, tool, tenant, ...)."
        return message_html(choose, problem=False)
    query = ExplainQuery(
        evaluator=where.evaluator,
        service=where.service,
        agent=where.agent,
        variant=where.variant,
        since=where.since,
        until=where.until,
    )
    more = link(PAGE, {**{name: params.get(name) for name in TEXT_PARAMS}, **_range(params, where)})
    return (await panel(site, query, more)).html


async def signature_panel(
    site: ReviewSite, item: SignatureItem, where: SignatureFilter, params: Mapping[str, str | None]
) -> Html:
    """A signature page's panel: the signature's traces against its evaluator's other verdicts."""
    evaluator = item.evaluator or None
    query = ExplainQuery(signature=item.id, evaluator=evaluator, since=where.since, until=where.until)
    more = link(PAGE, {"evaluator": evaluator, "signature": item.id, **_range(params, where)})
    return (await panel(site, query, more)).html


def _form(site: ReviewSite, values: Mapping[str, str | None]) -> Html:
    try:
        names = site.evaluator_names()
    except Exception:  # the live figures are a nicety: the form works without them
        names = []
    controls: list[Child] = [
        field("evaluator", select("evaluator", [("", "any"), *[(n, n) for n in names]], values.get("evaluator"))),
        field("service", text_input("service", values.get("service"))),
        field("agent", text_input("agent", values.get("agent"))),
        field("variant", text_input("variant", values.get("variant"), "version")),
        *time_fields(values),
        [el("input", type="hidden", name=n, value=values[n]) for n in HIDDEN_PARAMS if values.get(n)],
        el("button", "explain", type="submit"),
    ]
    return el("form", controls, method="get", action=PAGE, class_="filters")


def _what(query: ExplainQuery) -> str:
    span = f"from {fmt.utc(query.since)} to {fmt.utc(query.until)} UTC"
    if query.reference_since is not None and query.reference_until is not None:
        span += f", against {fmt.utc(query.reference_since)} to {fmt.utc(query.reference_until)} UTC"
    return f"Traces {span}: the dimension values that set the slice apart from its reference."


def standalone_page(site: ReviewSite, values: Mapping[str, str | None], query: ExplainQuery, shown: Html) -> Html:
    api = link(f"{PREFIX}/explain", values)
    main = [
        el("h1", TITLE),
        _form(site, values),
        el("p", _what(query), " ", el("a", "JSON", href=api), class_="muted"),
        shown,
    ]
    return shell(site, "what's different", main, active="failures")


def explain_routes(site: ReviewSite) -> list[web.RouteDef]:
    """GET /review/explain: the panel full width, over the API's parameters (a bad one is a 400 page)."""

    async def handler(request: web.Request) -> web.Response:
        try:
            query = explain_query(list(request.query.items()), time.time())
        except BadRequest as exc:
            return error_page(site, 400, "bad request", str(exc))
        values = {p.name: request.query.get(p.name, "").strip() or None for p in EXPLAIN_PARAMS}
        shown = await panel(site, query, heading=False)
        return respond(standalone_page(site, values, query, shown.html), shown.status)

    return [web.get(PAGE, handler)]
