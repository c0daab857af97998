"""GET /review, the Failures page: failure signatures by impact over the range, each with its trend (CSS bars: the
page allows no script nor inline style), status, first/last seen, where it was seen and links to its traces; and
GET /review/signatures/{id}: one signature's traces, one row per trace with every failing verdict it has. Both
with their "What's different" panel (pages/explain.py). Also the canary page's "new failure modes in <candidate>"
section."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from urllib.parse import quote

import monitor.web.pages.fmt as fmt
from monitor.review.signature_models import CandidateSignatures, SignatureDetail, SignatureItem, SignaturesPage
from monitor.web.html import Child, Html, el, join
from monitor.web.pages.layout import RESULTS, ROOT, SIGNATURES, ReviewSite, link, pager, shell
from monitor.web.pages.results import field, select, text_input, time_fields, trace_href

FILTERS = ("evaluator", "service", "agent", "variant", "since", "until")
RANGES = ("1h", "6h", "24h", "7d")
LEVELS = 8  # bar heights: classes h0 (none) to h8 (the busiest point)
WHERE_SHOWN = 5  # values of each "where seen" set shown
TEMPLATE_CHARS = 200
EXPLANATION_CHARS = 300


def signature_href(ident: str, params: Mapping[str, str | None] | None = None) -> str:
    range_only = {k: v for k, v in (params or {}).items() if k in ("since", "until")}
    return link(f"{SIGNATURES}/{quote(ident, safe='')}", range_only)


def state(query: Mapping[str, str]) -> dict[str, str | None]:
    """The page's filters as links carry them: the text as typed."""
    return {key: query.get(key, "").strip() or None for key in FILTERS}


def trend_bars(item: SignatureItem) -> Html:
    """The trend as bars, one per point, their heights CSS classes scaled to the busiest point."""
    peak = max(item.trend, default=0)
    step = fmt.duration_ms(item.trend_step * 1000)
    bars = []
    for index, count in enumerate(item.trend):
        level = 0 if count == 0 else max(1, round(count / peak * LEVELS))
        when = fmt.utc(item.trend_start + index * item.trend_step)
        bars.append(el("i", class_=f"h{level}", title=f"{when}: {count}"))
    label = f"{item.results} failing results over the range, per {step}: " + " ".join(map(str, item.trend))
    return el("span", bars, class_="spark", role="img", aria_label=label, title=label)


def _growth(item: SignatureItem) -> str:
    if item.previous_results == 0:
        return "none before" if item.results else ""
    return f"{item.growth * 100:+.0f}% vs {item.previous_results} before" if item.growth is not None else ""


def _where(item: SignatureItem) -> Html:
    lines: list[Child] = []
    for name, values in (
        ("services", item.services),
        ("agents", item.agents),
        ("models", item.models),
        ("variants", item.variants),
        ("versions", item.versions),
    ):
        if values:
            more = f" +{len(values) - WHERE_SHOWN}" if len(values) > WHERE_SHOWN else ""
            lines.append(join(el("span", f"{name} ", class_="muted"), ", ".join(values[:WHERE_SHOWN]) + more))
    return el("td", join(*lines, sep=el("br")), class_="where")


def what_failed(item: SignatureItem) -> list[Child]:
    step = f"{item.step_kind} {item.step_name}".strip()
    facts = " · ".join(part for part in (item.evaluator, step, item.error_type, item.agent) if part)
    return [el("span", facts, class_="muted"), el("br"), fmt.clip(item.template, TEMPLATE_CHARS)]


def status_badge(item: SignatureItem) -> Html:
    badge = {"new": "fail", "regressed": "fail", "ongoing": "skip", "resolved": "pass"}[item.status]
    return el("span", item.status, class_=f"badge {badge} status-{item.status}")


def signature_row(item: SignatureItem, params: Mapping[str, str | None]) -> Html:
    examples = [el("a", fmt.short_id(t), href=trace_href(t)) for t in reversed(item.example_traces[-3:])]
    cells = [
        el("td", el("a", *what_failed(item), href=signature_href(item.id, params), class_="signature")),
        el("td", status_badge(item)),
        el("td", str(item.results), el("br"), el("span", _growth(item), class_="muted"), class_="num"),
        el("td", str(item.traces), class_="num"),
        el("td", trend_bars(item)),
        el("td", fmt.utc(item.first_seen), el("br"), fmt.utc(item.last_seen), class_="nowrap"),
        _where(item),
        el("td", join(el("a", "traces", href=signature_href(item.id, params)), *examples, sep=el("br")), class_="id"),
    ]
    return el("tr", cells, class_=f"sig-{item.status}", data_signature=item.id)


HEADINGS = ("failure", "status", "results", "traces", "trend", "first / last seen", "where seen", "traces")


def failures_form(params: Mapping[str, str | None], evaluators: list[str]) -> Html:
    controls = [
        field("evaluator", select("evaluator", [("", "any"), *[(n, n) for n in evaluators]], params.get("evaluator"))),
        field("service", text_input("service", params.get("service"))),
        field("agent", text_input("agent", params.get("agent"))),
        field("variant", text_input("variant", params.get("variant"), "version")),
        *time_fields(params),
        el("button", "filter", type="submit"),
    ]
    ranges = [el("a", r, href=link(ROOT, {**params, "since": r, "until": None})) for r in RANGES]
    results = link(RESULTS, {**{k: v for k, v in params.items() if k != "agent"}, "outcome": "fail"})
    quick = el(
        "p",
        "last ",
        join(*ranges, sep=" · "),
        " · ",
        el("a", "reset", href=ROOT),
        " · ",
        el("a", "these failures one by one", href=results),
        class_="ranges",
    )
    return join(el("form", controls, method="get", action=ROOT, class_="filters"), quick)


def failures_page(
    site: ReviewSite,
    query: Mapping[str, str],
    page: SignaturesPage,
    evaluators: Sequence[str],
    explained: Html | None = None,
) -> Html:
    """The page; `explained`: its "What's different" panel (pages/explain.py)."""
    params = state(query)
    span = f"{fmt.utc(page.since)} to {fmt.utc(page.until)}"
    if page.items:
        head = el("thead", el("tr", [el("th", h) for h in HEADINGS]))
        rows = el("tbody", [signature_row(item, params) for item in page.items])
        table: Html = el("table", head, rows, class_="signatures")
    else:
        table = el("p", "No failures in this range. Widen the time range, or check the filters.")
    links = pager(ROOT, params, query, page.next_cursor, ("← first", "more →"))
    main = [
        el("h1", "Failures"),
        failures_form(params, list(evaluators)),
        el(
            "p",
            f"Failure signatures from {span} (UTC), by impact: failing results in the range, then growth "
            "against the range before it.",
            class_="muted",
        ),
        explained,
        table,
        el("p", join(*links, sep=" · "), class_="pager") if links else None,
    ]
    return shell(site, "failures", main, active="failures")


def _verdicts(detail: SignatureDetail, trace_id: str) -> Html:
    trace = next(t for t in detail.traces if t.trace_id == trace_id)
    items = []
    for verdict in trace.verdicts:
        mine = verdict.signature == detail.signature.id
        other = None
        if verdict.signature is not None and not mine:
            other = el("a", "its signature", href=signature_href(verdict.signature), class_="more")
        items.append(
            el(
                "li",
                el("strong", verdict.evaluator),
                f" ({verdict.level}) ",
                fmt.clip(verdict.explanation, EXPLANATION_CHARS),
                " " if other else None,
                other,
                class_="this-signature" if mine else None,
            )
        )
    return el("ul", items, class_="verdicts")


def signature_page(
    site: ReviewSite, query: Mapping[str, str], detail: SignatureDetail, explained: Html | None = None
) -> Html:
    """The page; `explained`: its "What's different" panel (pages/explain.py)."""
    item = detail.signature
    params = {key: query.get(key, "").strip() or None for key in ("since", "until")}
    rows = [
        el(
            "tr",
            el("td", fmt.utc(trace.evaluated_at), class_="nowrap"),
            el("td", trace.service or ""),
            el("td", trace.variant, class_="variant"),
            el("td", _verdicts(detail, trace.trace_id)),
            el("td", el("a", fmt.short_id(trace.trace_id), href=trace_href(trace.trace_id)), class_="id"),
            data_trace=trace.trace_id,
        )
        for trace in detail.traces
    ]
    head = el(
        "thead", el("tr", [el("th", h) for h in ("time (UTC)", "service", "variant", "failing verdicts", "trace")])
    )
    table = (
        el("table", head, el("tbody", rows), class_="signature-traces")
        if rows
        else el("p", "No trace with this failure in the range; widen it (since, until).")
    )
    facts: list[Child] = [
        status_badge(item),
        f" {item.results} results in {item.traces} traces over the range · {item.count} in all · first seen "
        f"{fmt.utc(item.first_seen)} · last seen {fmt.utc(item.last_seen)} · ",
        trend_bars(item),
    ]
    older = None
    if detail.next_cursor:
        following = link(signature_href(item.id), {**params, "cursor": detail.next_cursor})
        older = el("p", el("a", "older →", href=following, rel="next"), class_="pager")
    main = [
        el("h1", "Failure ", el("code", item.id)),
        el("p", *what_failed(item), class_="template"),
        el("p", el("span", "example ", class_="muted"), fmt.clip(item.example, 2000)),
        el("p", facts),
        el("table", el("tbody", el("tr", _where(item))), class_="where"),
        el("p", el("a", "← failures", href=link(ROOT, {**params, "evaluator": item.evaluator}))),
        explained,
        table,
        older,
    ]
    return shell(site, f"failure {item.id}", main, active="failures")


def candidate_section(found: CandidateSignatures) -> Html:
    """The canary page's "new failure modes in <candidate>": signatures seen only, or far more often per trace,
    in the candidate over the comparison's window."""
    title = el("h2", "New failure modes in ", el("code", found.candidate))
    if not found.items:
        return join(title, el("p", f"None against {found.baseline} over the window.", class_="muted"))
    rows = [
        el(
            "tr",
            el("td", el("a", fmt.clip(c.template, TEMPLATE_CHARS) or c.id, href=signature_href(c.id))),
            el("td", c.evaluator),
            el("td", f"{c.step_kind} {c.step_name}".strip(), el("br"), c.error_type),
            el("td", f"{c.candidate_results} ({c.candidate_per_trace:.2f} a trace)", class_="num"),
            el("td", f"{c.baseline_results} ({c.baseline_per_trace:.2f} a trace)", class_="num"),
            el("td", "only in the candidate" if c.only_in_candidate else "far more often", class_="muted"),
            data_signature=c.id,
        )
        for c in found.items
    ]
    head = ("failure", "evaluator", "step, error", found.candidate, found.baseline, "")
    note = el(
        "p",
        f"Over {found.candidate_traces} stored traces of {found.candidate} and {found.baseline_traces} of "
        f"{found.baseline}: signatures seen only in {found.candidate}, or at least 5 times as often per trace.",
        class_="muted",
    )
    table = el("table", el("thead", el("tr", [el("th", h) for h in head])), el("tbody", rows), class_="new-modes")
    return join(title, note, table)
