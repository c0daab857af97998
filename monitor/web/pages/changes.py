"""GET /review/changes: drift's latest report (monitor/detection), what drifted largest |effect| first, filtered by
service, agent and kind (`all`: every tested signal). Each change with its summary, baseline → recent with their
counts, since when, a before/after chart (inline SVG: each window's mean with its 95 % interval; no script), the
link to the recent window's results on the review page and the one to what's different in it (/review/explain,
against the trailing window before it). Without a report: what drift watches, and when the first report comes."""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping

from aiohttp import web

import monitor.web.pages.fmt as fmt
from monitor.config.drift import DriftConfig
from monitor.detection.signals import SIGNALS
from monitor.review.api_params import BadRequest
from monitor.review.change_models import ChangeItem, ChangesPage, ChangeWindow
from monitor.web.changes import (
    KINDS,
    ChangesQuery,
    ChangesSource,
    changes_page,
    duration,
    effect_text,
    label,
    parse_bool,
    value_text,
)
from monitor.web.html import Child, Html, el, join
from monitor.web.page_params import QueryError, text_param
from monitor.web.pages.explain import PAGE as EXPLAIN
from monitor.web.pages.layout import ROOT, ReviewSite, error_page, link, respond, shell
from monitor.web.pages.results import field, select, text_input

log = logging.getLogger(__name__)
PAGE = f"{ROOT}/changes"
PAGE_LIMIT = 200
WIDTH, HEIGHT, LEFT, RIGHT = 300, 56, 64, 236  # the chart: labels left of LEFT, the axis LEFT..RIGHT, values after
ROWS = (("baseline", 18), ("recent", 40))
BASELINES = {"same_hours": "same hours, previous days", "trailing": "the window before"}


def _query(query: Mapping[str, str]) -> ChangesQuery:
    kind = text_param(query, "kind")
    if kind is not None and kind not in KINDS:
        raise QueryError(f"kind: {kind!r} is not one of {', '.join(KINDS)}")
    try:
        every = parse_bool("all", text_param(query, "all") or "false")
    except BadRequest as exc:
        raise QueryError(str(exc)) from None
    return ChangesQuery(text_param(query, "service"), text_param(query, "agent"), kind, every, PAGE_LIMIT)


def _x(value: float, low: float, high: float) -> float:
    return round(LEFT + (value - low) / (high - low) * (RIGHT - LEFT), 1)


def chart(item: ChangeItem) -> Html:
    """Baseline and recent: each mean a dot, its 95 % interval a line, on one axis spanning both intervals."""
    windows: list[tuple[str, int, ChangeWindow]] = [
        (name, y, item.baseline if name == "baseline" else item.recent) for name, y in ROWS
    ]
    ends = [v for _, _, w in windows for v in (w.low, w.high, w.mean) if v is not None]
    if not ends:
        return el("p", "no data to chart", class_="muted")
    low, high = min(ends), max(ends)
    pad = (high - low) * 0.08 or max(abs(high) * 0.1, 1e-6)
    low, high = low - pad, high + pad
    parts: list[Child] = [el("title", f"{item.signal}: baseline and recent means with their 95 % intervals")]
    for name, y, window in windows:
        parts.append(el("text", name, x=0, y=y + 4, class_="label"))
        if window.mean is None:
            parts.append(el("text", "no data", x=LEFT, y=y + 4, class_="label"))
            continue
        lo = window.low if window.low is not None else window.mean
        hi = window.high if window.high is not None else window.mean
        parts.append(el("line", x1=_x(lo, low, high), x2=_x(hi, low, high), y1=y, y2=y, class_=f"ci {name}"))
        parts.append(el("circle", cx=_x(window.mean, low, high), cy=y, r=4, class_=f"dot {name}"))
        parts.append(el("text", value_text(window.mean, item.unit), x=RIGHT + 6, y=y + 4, class_="value"))
    return el(
        "svg",
        parts,
        xmlns="http://www.w3.org/2000/svg",
        viewbox=f"0 0 {WIDTH} {HEIGHT}",
        width=WIDTH,
        height=HEIGHT,
        role="img",
        class_="change-chart",
    )


def _badge(item: ChangeItem) -> Html:
    if item.worse:
        return el("span", "worse", class_="badge fail")
    if item.kind == "quality" and item.significant:
        return el("span", "better", class_="badge pass")
    if item.significant:
        return el("span", f"changed {item.direction or ''}".strip(), class_="badge skip")
    return el("span", "no significant change", class_="badge muted")


def _window_text(window: ChangeWindow, unit: str) -> str:
    interval = ""
    if window.low is not None and window.high is not None:
        interval = f" [{value_text(window.low, unit)}, {value_text(window.high, unit)}]"
    return f"{value_text(window.mean, unit)}{interval} (n = {window.n})"


def _p(value: float | None) -> str:
    return "–" if value is None else ("< 0.0001" if value < 0.0001 else f"{value:.4f}")


def explain_href(item: ChangeItem, found: ChangesPage, drift: DriftConfig | None) -> str:
    """/review/explain of this agent's recent window against the window of `drift.trailing` before it (the report
    keeps no per-row baseline range: the same hours of previous days are several ranges, not one)."""
    since, trailing = found.recent_since, (drift or DriftConfig()).trailing
    window = {"since": str(math.floor(since)), "until": str(math.ceil(found.as_of))}
    reference = {"reference_since": str(math.floor(since - trailing)), "reference_until": window["since"]}
    return link(EXPLAIN, {"service": item.service, "agent": item.agent or None, **window, **reference})


def change_section(item: ChangeItem, rank: int, explain: str | None = None, trailing: str = "") -> Html:
    who = join(el("strong", item.service), " / ", el("strong", item.agent or "(no agent)"))
    facts = [
        el("dt", "baseline"),
        el(
            "dd",
            _window_text(item.baseline, item.unit),
            el("span", f" {BASELINES[item.baseline.kind]}", class_="muted"),
        ),
        el("dt", "recent"),
        el("dd", _window_text(item.recent, item.unit)),
        el("dt", "effect"),
        el(
            "dd",
            effect_text(item.effect, item.scale),
            el("span", f" · p {_p(item.p_value)} · q {_p(item.q_value)}", class_="muted"),
        ),
        el("dt", "since"),
        el("dd", f"{fmt.utc(item.since)} UTC" if item.since is not None else "–"),
    ]
    if item.recent_variants:
        facts += [el("dt", "new variants"), el("dd", join(*[el("code", v) for v in item.recent_variants], sep=" "))]
    heading = el("h2", f"{rank}. ", who, " · ", el("code", label(item.signal, item.subject)), " ", _badge(item))
    return el(
        "section",
        heading,
        el("p", item.summary, class_="change-summary"),
        el("p", f"{item.description} ({item.unit}), {item.kind}", class_="muted"),
        el("div", el("dl", facts, class_="change-facts"), chart(item), class_="change-body"),
        el(
            "p",
            el("a", "the recent window's traces", href=item.traces_url, class_="traces"),
            [" · ", el("a", "what's different in it", href=explain, class_="explain")] if explain else None,
            el("span", f" (against the {trailing} before it)", class_="muted") if explain and trailing else None,
        ),
        class_=f"change {'worse' if item.worse else item.kind}",
        id=f"change-{rank}",
    )


def _form(query: ChangesQuery) -> Html:
    kinds = [("", "any"), *[(k, k) for k in KINDS]]
    controls = [
        field("service", text_input("service", query.service)),
        field("agent", text_input("agent", query.agent)),
        field("kind", select("kind", kinds, query.kind)),
        field(
            "signals",
            select("all", [("false", "changes only"), ("true", "every tested signal")], str(query.all).lower()),
        ),
        el("button", "filter", type="submit"),
    ]
    return join(
        el("form", controls, method="get", action=PAGE, class_="filters"),
        el("p", el("a", "reset", href=PAGE), class_="ranges"),
    )


def watches(drift: DriftConfig | None, enabled: bool) -> Html:
    """The empty state: what drift watches, over which windows, and when its first report comes."""
    d = drift or DriftConfig()
    days = max(1, round(d.baseline / d.period))
    what = (
        "Drift detection compares each service and agent with its own past: "
        + ", ".join(s.description for s in SIGNALS.values())
        + f". The last {duration(d.recent)} is tested against the same hours of the previous {days} days "
        f"(or the {duration(d.trailing)} before it while there is less history); a signal is tested once both "
        f"windows hold {d.min_samples} items, and counts as changed past {d.min_effect.absolute * 100:g} points "
        f"(ratios and scores) or {d.min_effect.relative * 100:g} % (the others) at a false discovery rate of "
        f"{d.false_discovery_rate:g}."
    )
    if not enabled:
        when = "Drift detection is off in this process (drift.enabled: false): no report is made."
    else:
        when = f"No report yet: the first one is made {duration(d.interval)} after the daemon starts, then one every "
        when += f"{duration(d.interval)}."
    return join(el("p", when, class_="problem" if not enabled else None), el("p", what, class_="muted"))


def page_of(
    site: ReviewSite, query: ChangesQuery, found: ChangesPage | None, drift: DriftConfig | None, on: bool
) -> Html:
    title = "Changes: what drifted"
    if found is None:
        return shell(site, "changes", [el("h1", title), watches(drift, on)], active="changes")
    window = f"{fmt.utc(found.recent_since)} to {fmt.utc(found.as_of)} UTC"
    note = el(
        "p",
        f"As of {fmt.utc(found.as_of)} UTC: the recent window ({window}) against its baseline; {found.tested} "
        f"signals tested; {found.matched} {'shown' if found.all else 'changed'}, largest effect first.",
        " The last read of the store failed: some figures are from an earlier report." if not found.complete else None,
        class_="muted",
    )
    if not found.items:
        every = link(PAGE, {"service": query.service, "agent": query.agent, "kind": query.kind, "all": "true"})
        body: Child = el("p", "No change matches. ", el("a", "every tested signal", href=every), class_="empty")
    else:
        trailing = duration((drift or DriftConfig()).trailing)
        body = [
            change_section(item, rank, explain_href(item, found, drift), trailing)
            for rank, item in enumerate(found.items, 1)
        ]
    return shell(site, "changes", [el("h1", title), note, _form(query), body], active="changes")


def changes_routes(site: ReviewSite, changes: ChangesSource | None, drift: DriftConfig | None) -> list[web.RouteDef]:
    """GET /review/changes over `changes` (the daemon's latest report; None: drift is not run)."""

    async def handler(request: web.Request) -> web.Response:
        try:
            query = _query(request.query)
        except QueryError as exc:
            return error_page(site, 400, "bad request", str(exc))
        try:
            report = changes() if changes is not None else None
        except Exception:
            log.exception("review page: reading the drift report failed")
            return error_page(site, 500, "changes unavailable", "Reading the drift report failed (see the log).")
        found = changes_page(report, query, drift) if report is not None else None
        return respond(page_of(site, query, found, drift, changes is not None))

    return [web.get(PAGE, handler)]
