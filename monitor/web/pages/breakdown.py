"""GET /review/breakdown: verdict counts and spend per service, agent, model, tool or variant (of one variant's
traces when asked), each row linking to its results; most failures first, or (sort=cost) the most spend first."""

from __future__ import annotations

from collections.abc import Mapping

import monitor.web.pages.fmt as fmt
from monitor.review.models import Breakdown, BreakdownGroup
from monitor.web.html import Html, el
from monitor.web.page_params import BREAKDOWN_BY, BREAKDOWN_SORT
from monitor.web.pages.layout import RESULTS, ROOT, ReviewSite, link, shell
from monitor.web.pages.results import field, select, text_input, time_fields
from monitor.web.pages.trace import spend_cell

PAGE = f"{ROOT}/breakdown"
SORT_LABELS = {"failures": "most failures", "cost": "most spend"}
FILTERABLE = ("service", "agent", "model", "variant")  # ResultFilter has no tool: tool rows are not links


def bar(ratio: float | None) -> Html:
    """The pass ratio as a bar: review.css sizes `.w0` … `.w100` in steps of 5 (CSP: no inline styles)."""
    if ratio is None:
        return el("span", class_="bar empty")
    width = max(0, min(100, round(ratio * 20) * 5))
    return el("span", el("span", class_=f"fill w{width}"), class_="bar")


def group_row(group: BreakdownGroup, by: str, params: Mapping[str, str | None]) -> Html:
    label = group.value or "(none)"
    if by in FILTERABLE and group.value:
        target = {"evaluator": params.get("evaluator"), "variant": params.get("variant")}
        target |= {by: group.value, "outcome": "fail", "since": params.get("since"), "until": params.get("until")}
        value: Html = el("a", label, href=link(RESULTS, target))
    else:
        value = el("span", label)
    cells = [
        el("td", value),
        el("td", str(group.failed), class_="num fail-count" if group.failed else "num"),
        el("td", str(group.passed), class_="num"),
        el("td", str(group.skipped), class_="num"),
        el("td", fmt.ratio(group.pass_ratio), class_="num"),
        el("td", bar(group.pass_ratio)),
        el("td", str(group.calls), class_="num"),
        el("td", spend_cell(group.cost_usd, group.unpriced_calls), class_="num spend"),
    ]
    return el("tr", cells)


def breakdown_page(site: ReviewSite, params: Mapping[str, str | None], result: Breakdown) -> Html:
    names = site.evaluator_names()
    form = el(
        "form",
        field("evaluator", select("evaluator", [("", "any"), *[(n, n) for n in names]], params.get("evaluator"))),
        field("by", select("by", [(b, b) for b in BREAKDOWN_BY], result.by)),
        field("variant", text_input("variant", params.get("variant"), "any")),
        field("sort", select("sort", [(s, SORT_LABELS.get(s, s)) for s in BREAKDOWN_SORT], result.sort)),
        *time_fields(params),
        el("button", "show", type="submit"),
        method="get",
        action=PAGE,
        class_="filters",
    )
    if result.groups:
        headers = (result.by, "failed", "passed", "skipped", "pass ratio", "", "LLM calls", "spend")
        head = el("tr", [el("th", h) for h in headers])
        rows = [group_row(g, result.by, params) for g in result.groups]
        table: Html = el("table", el("thead", head), el("tbody", rows), class_="breakdown")
    else:
        table = el("p", "No results in this range.")
    note = el("p", "Tool rows count every trace that called the tool; the results list cannot filter by tool.")
    spend_note = el(
        "p",
        "Spend: the LLM calls of the stored traces in the range (whatever the evaluator); per service, variant or "
        "tool every call of those traces. Unpriced calls (a model with no known price) are counted, not priced.",
        class_="note",
    )
    title = f"Breakdown by {result.by}" + (f" of variant {result.variant}" if result.variant is not None else "")
    return shell(
        site,
        f"breakdown by {result.by}",
        [el("h1", title), form, table, note if result.by == "tool" else None, spend_note],
        active="breakdown",
    )
