"""GET /review/results: the filter form and the results table, newest first, with an "older →" link per page;
each row with its review and a compact agree/disagree form (review_forms.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from urllib.parse import quote

import monitor.web.pages.fmt as fmt
from monitor.review.models import EvaluatorStatus, ResultFilter, ResultItem, ResultsPage
from monitor.web.html import Child, Html, el, join
from monitor.web.pages.agreement_line import agreement_parts
from monitor.web.pages.layout import RESULTS, ROOT, ReviewSite, link, pager, shell
from monitor.web.pages.review_forms import ReviewForms, Reviews, forms_note, review_cell

RANGES = ("15m", "1h", "6h", "24h", "7d")
EXPLANATION_CHARS = 240
EXCERPT_CHARS = 120
TITLE_CHARS = 2000


VERDICTS = "verdicts"  # the trace page's verdicts heading: where a clipped explanation is read whole


def span_anchor(span_id: str) -> str:
    """The id of a step's row on the trace page."""
    return "span-" + quote(span_id, safe="")


def trace_href(trace_id: str, span_id: str | None = None) -> str:
    """The trace page's path (at the span's step when given), both ids URL-encoded."""
    return f"{ROOT}/traces/{quote(trace_id, safe='')}" + (f"#{span_anchor(span_id)}" if span_id else "")


def state(query: Mapping[str, str], where: ResultFilter) -> dict[str, str | None]:
    """The page's parameters as links carry them: the text as typed, outcome always explicit ("any" for all)."""
    params = {key: query.get(key, "").strip() or None for key in ("evaluator", "service", "variant", "agent", "model")}
    params["outcome"] = where.outcome or "any"
    params["since"] = query.get("since", "").strip() or None
    params["until"] = query.get("until", "").strip() or None
    return params


def select(name: str, options: Sequence[tuple[str, str]], chosen: str | None) -> Html:
    """A <select> of (value, label) options; `chosen` is added when it is not one of them."""
    values = [value for value, _ in options]
    extra = [(chosen, chosen)] if chosen and chosen not in values else []
    return el(
        "select",
        [el("option", label, value=value, selected=value == (chosen or "")) for value, label in [*options, *extra]],
        name=name,
        id=f"f-{name}",
    )


def field(label: str, control: Html) -> Html:
    return el("label", el("span", label), control)


def text_input(name: str, value: str | None, placeholder: str = "", datalist: str | None = None) -> Html:
    return el(
        "input", type="text", name=name, id=f"f-{name}", value=value or "", placeholder=placeholder, list=datalist
    )


def time_fields(params: Mapping[str, str | None]) -> list[Html]:
    options = el("datalist", [el("option", value=r) for r in RANGES], id="ranges")
    return [
        field("since", text_input("since", params.get("since"), "1h, 2025-01-02T03:00Z", "ranges")),
        field("until", text_input("until", params.get("until"), "now")),
        options,
    ]


def filter_form(params: Mapping[str, str | None], evaluators: list[str]) -> Html:
    outcome = params.get("outcome") or "any"
    controls = [
        field("evaluator", select("evaluator", [("", "any"), *[(n, n) for n in evaluators]], params.get("evaluator"))),
        field(
            "outcome",
            select("outcome", [("fail", "fail"), ("skip", "skip"), ("pass", "pass"), ("any", "any")], outcome),
        ),
        field("service", text_input("service", params.get("service"))),
        field("variant", text_input("variant", params.get("variant"), "version")),
        field("agent", text_input("agent", params.get("agent"))),
        field("model", text_input("model", params.get("model"))),
        *time_fields(params),
        el("button", "filter", type="submit"),
    ]
    ranges = [el("a", r, href=link(RESULTS, {**params, "since": r, "until": None})) for r in RANGES]
    quick = el("p", "last ", join(*ranges, sep=" · "), " · ", el("a", "reset", href=RESULTS), class_="ranges")
    return join(el("form", controls, method="get", action=RESULTS, class_="filters"), quick)


def evaluator_line(info: EvaluatorStatus, params: Mapping[str, str | None]) -> Html:
    """One line about the selected evaluator: kind, threshold, alert state, in-process window pass ratios."""
    parts: list[Child] = [el("strong", info.name), f" {info.kind}, {info.level} level"]
    if info.threshold is not None:
        parts.append(f", threshold {info.threshold:g}")
    if info.sampling < 1:
        parts.append(f", sampling {info.sampling:g}")
    if info.alert_min_pass_ratio is not None:
        state_text = info.alert_state or "unknown"
        parts += [", alert ", el("span", state_text, class_=f"alert-{state_text}")]
        parts.append(f" below {fmt.ratio(info.alert_min_pass_ratio)}")
    variant = params.get("variant")
    if variant:  # the figures of that variant only: the in-process windows keep one per variant
        windows = info.variant_windows.get(variant, [])
        parts.append(f" · variant {variant}:" if windows else f" · no result of variant {variant} in the windows")
    else:
        windows = info.windows
    for window in windows:
        parts.append(f" · {window.window}: {fmt.ratio(window.pass_ratio)} of {window.samples}")
    parts += agreement_parts(info.agreement)
    by = {"evaluator": info.name, "variant": params.get("variant"), "since": params.get("since")}
    by["until"] = params.get("until")
    parts += [" · ", el("a", "breakdown", href=link(f"{ROOT}/breakdown", {**by, "by": "service"}))]
    if not params.get("variant"):
        parts += [" · ", el("a", "by variant", href=link(f"{ROOT}/breakdown", {**by, "by": "variant"}))]
    return el("p", parts, class_="evaluator")


def outcome_cell(item: ResultItem) -> Html:
    badge = el("span", item.outcome, class_=f"badge {item.outcome}")
    reason = el("span", f" {item.skip_reason}", class_="muted") if item.skip_reason else None
    return el("td", badge, reason)


def excerpt(text: str | None, limit: int, whole: str | None = None) -> Html:
    """`text` clipped at a word boundary; `whole`: where a clipped text is read in full (a "full text" link)."""
    clipped = fmt.clip_words(text, limit)
    cut = clipped.endswith(fmt.ELLIPSIS) and len(" ".join((text or "").split())) > limit
    more = el("a", "full text", href=whole, class_="more") if whole and cut else None
    return el("td", clipped, " " if more else None, more, title=fmt.clip(text, TITLE_CHARS) or None, class_="text")


def result_row(
    item: ResultItem, variants: bool = False, reviews: Reviews | None = None, forms: ReviewForms | None = None
) -> Html:
    """A result's row; `variants`: with the variant column (some result of the page has a variant); `reviews`
    and `forms`: with the review column."""
    who = join(item.agent or "", el("br") if item.agent and item.model else None, item.model or "")
    session = None
    if item.session_id:  # a session-level result: its conversation's page
        href = f"{ROOT}/sessions/{quote(item.session_id, safe='')}"
        session = join(el("br"), el("a", "conversation", href=href, class_="session", title=item.session_id))
    cells = [
        el("td", fmt.utc(item.evaluated_at), class_="nowrap"),
        el("td", item.evaluator),
        outcome_cell(item),
        el("td", fmt.score(item.score), class_="num"),
        el("td", item.service or ""),
        el("td", item.variant, class_="variant") if variants else None,
        el("td", who),
        excerpt(item.explanation, EXPLANATION_CHARS, f"{trace_href(item.trace_id)}#{VERDICTS}"),
        excerpt(item.input_excerpt, EXCERPT_CHARS),
        excerpt(item.output_excerpt, EXCERPT_CHARS),
        el(
            "td",
            el("a", fmt.short_id(item.trace_id), href=trace_href(item.trace_id, item.span_id)),
            session,
            class_="id",
        ),
        review_cell(item, reviews, forms, full=False) if reviews is not None and forms is not None else None,
    ]
    return el("tr", cells, class_=f"row-{item.outcome}")


HEADINGS = ("time (UTC)", "evaluator", "outcome", "score", "service", "agent / model", "explanation", "input", "output")


def results_table(page: ResultsPage, reviews: Reviews | None = None, forms: ReviewForms | None = None) -> Html:
    """The results; a variant column after the service when one of them has a variant (variants are on), a review
    column when reviews can be written or one of them has one."""
    if not page.items:
        return el("p", "No results match. The outcome is fail unless you choose another; widen the time range.")
    variants = any(item.variant for item in page.items)
    reviews, forms = reviews or Reviews(), forms or ReviewForms()
    column = forms.enabled or bool(reviews.in_force)
    headings = [*HEADINGS[:5], *(["variant"] if variants else []), *HEADINGS[5:], "trace"]
    headings += ["review"] if column else []
    head = el("thead", el("tr", [el("th", h) for h in headings]))
    rows = [result_row(item, variants, reviews if column else None, forms) for item in page.items]
    return join(forms_note(forms, reviews), el("table", head, el("tbody", rows), class_="results"))


def results_page(
    site: ReviewSite,
    query: Mapping[str, str],
    where: ResultFilter,
    page: ResultsPage,
    infos: Sequence[EvaluatorStatus],
    reviews: Reviews | None = None,
    forms: ReviewForms | None = None,
) -> Html:
    params = state(query, where)
    names = sorted({info.name for info in infos})
    selected = next((info for info in infos if info.name == where.evaluator), None)
    links = pager(RESULTS, params, query, page.next_cursor, ("← newest", "older →"))
    main = [
        el("h1", "Results"),
        filter_form(params, names),
        evaluator_line(selected, params) if selected is not None else None,
        results_table(page, reviews, forms),
        el("p", join(*links, sep=" · "), class_="pager") if links else None,
    ]
    return shell(site, "results", main, active="results")
