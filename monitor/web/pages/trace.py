"""GET /review/traces/{trace_id}: the trace's summary, its step tree and every evaluator's verdict with its review
(the review in force, its history and the review form: review_forms.py)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from urllib.parse import quote

import monitor.web.pages.fmt as fmt
from monitor.review.models import AgentSpend, ModelUsage, ResultItem, Step, TraceDetail, TraceSummary
from monitor.web.html import Child, Html, el, join
from monitor.web.pages.layout import RESULTS, ROOT, ReviewSite, link, shell
from monitor.web.pages.results import VERDICTS, span_anchor, trace_href
from monitor.web.pages.review_forms import ReviewForms, Reviews, forms_note, review_cell

MAX_INDENT = 16  # deeper steps share the last indentation class (review.css has .d0 … .d16)
INLINE_CHARS = 160  # longer texts fold into <details>
ORDER = {"fail": 0, "skip": 1, "pass": 2}
TRACE_ID = re.compile(r"[0-9a-fA-F]{32}")
PARTNER = (
    "partner_trace_id"  # in a pairwise judge's details: the trace it was paired with (partner_variant: its variant)
)


def long_text(text: str | None, inline: int = INLINE_CHARS) -> Child:
    """Short text as it is; longer text clipped, the whole in a <details> below (no script needed)."""
    if not text:
        return None
    if len(text) <= inline:
        return el("span", text, class_="pre")
    return el("details", el("summary", fmt.clip(text, inline)), el("pre", text))


def _pair(term: str, value: Child) -> list[Html]:
    return [el("dt", term), el("dd", value)]


def cost(usd: float | None, unpriced: int = 0, source: str | None = None) -> Html:
    """A spend figure (its exact USD in `data-usd` and the title), with its source and the calls left unpriced;
    "unpriced" when nothing was priced (never a made-up $0)."""
    missing = f" + {unpriced} unpriced call{'' if unpriced == 1 else 's'}" if unpriced and usd is not None else ""
    if usd is None:
        return el("span", "unpriced" if unpriced else "–", class_="cost unpriced")
    where = f" ({fmt.SOURCES.get(source, source)})" if source else ""
    return el(
        "span",
        fmt.usd(usd),
        el("span", where, class_="cost-source") if where else None,
        el("span", missing, class_="warn") if missing else None,
        class_="cost",
        data_usd=repr(usd),
        title=f"{usd!r} USD",
    )


def spend_cell(usd: float | None, unpriced: int) -> Html:
    if usd is None and unpriced:
        return el("span", f"unpriced ({unpriced} call{'' if unpriced == 1 else 's'})", class_="cost unpriced")
    return cost(usd, unpriced)


def summary_block(summary: TraceSummary) -> Html:
    errors = el("span", f"{len(summary.errors)} failed", class_="err") if summary.has_errors else "none"
    service = summary.service or ""
    pairs = [
        *_pair("evaluated (UTC)", fmt.utc(summary.evaluated_at)),
        *_pair(
            "service", el("a", service, href=link(RESULTS, {"service": service, "outcome": "any"})) if service else ""
        ),
        *_pair("agents", ", ".join(summary.agents)),
        *_pair("duration", fmt.duration_ms(summary.duration_ms)),
        *_pair("spans", str(summary.span_count)),
        *_pair("errors", errors),
        *_pair("tools", ", ".join(summary.tools)),
        *_pair("spend", el("span", spend_cell(summary.cost_usd, summary.unpriced_calls), id="trace-cost")),
    ]
    if summary.variant:  # after the service
        pairs[4:4] = _pair(
            "variant", el("a", summary.variant, href=link(RESULTS, {"variant": summary.variant, "outcome": "any"}))
        )
    return el("dl", pairs, class_="summary")


def errors_list(summary: TraceSummary) -> Html | None:
    """The failed spans, each linking to its step."""
    if not summary.errors:
        return None
    items = [
        el(
            "li",
            el("a", f"{e.kind} {e.name}", href=f"#{span_anchor(e.span_id)}"),
            ": ",
            el("span", e.error, class_="err"),
        )
        for e in summary.errors
    ]
    return el("ul", items, class_="errors")


def io_block(summary: TraceSummary) -> Html:
    """The trace's input (with the rule that chose it) and output."""
    source = (
        el("p", "chosen by: ", el("span", summary.input_source), class_="input-source")
        if summary.input_source
        else None
    )
    return el(
        "div",
        el("section", el("h3", "input"), source, el("pre", summary.input or "")),
        el("section", el("h3", "output"), el("pre", summary.output or "")),
        class_="io",
    )


def models_table(summary: TraceSummary) -> Html | None:
    """Calls, tokens and spend per model, the most spend first."""
    if not summary.models:
        return None
    head = el("tr", [el("th", h) for h in ("model", "calls", "input tokens", "output tokens", "spend")])
    rows = [
        el(
            "tr",
            el("td", m.model),
            el("td", str(m.calls), class_="num"),
            *[el("td", count(n), class_="num") for n in (m.input_tokens, m.output_tokens)],
            el("td", spend_cell(m.cost_usd, m.unpriced_calls), class_="num"),
        )
        for m in _by_spend(summary.models)
    ]
    return el("table", el("thead", head), el("tbody", rows), class_="compact models")


def agents_table(summary: TraceSummary) -> Html | None:
    """Calls and spend per agent, the most spend first ("(no agent)": calls outside any agent)."""
    if not any(a.calls for a in summary.agent_spend):
        return None
    head = el("tr", [el("th", h) for h in ("agent", "calls", "spend")])
    rows = [
        el(
            "tr",
            el("td", a.agent or "(no agent)"),
            el("td", str(a.calls), class_="num"),
            el("td", spend_cell(a.cost_usd, a.unpriced_calls), class_="num"),
        )
        for a in _by_spend(summary.agent_spend)
    ]
    return el("table", el("thead", head), el("tbody", rows), class_="compact agent-spend")


def _by_spend(groups: Sequence[ModelUsage | AgentSpend]) -> list:
    return sorted(groups, key=lambda g: -(g.cost_usd or 0.0))  # stable: first call's order among equals


def partner(details: str | None) -> Html | None:
    """A pairwise judge's partner trace (`partner_trace_id` in its details JSON) as a link to its page, with its
    variant; an id that is not a trace id is shown as text. None when the details name no partner."""
    try:
        values = json.loads(details) if details else None
    except ValueError:  # not JSON, or cut at the store's limit
        return None
    if not isinstance(values, dict):
        return None
    trace_id = values.get(PARTNER)
    if not isinstance(trace_id, str) or not trace_id:
        return None
    if TRACE_ID.fullmatch(trace_id):
        shown: Html = el("a", fmt.short_id(trace_id.lower()), href=trace_href(trace_id.lower()), class_="partner")
    else:
        shown = el("code", fmt.clip(trace_id, 64))
    variant = values.get("partner_variant")
    of = f" ({fmt.clip(variant, 64)})" if isinstance(variant, str) and variant else None
    return el("div", "paired with ", shown, of, class_="pair")


def step_link(span_id: str | None, names: Mapping[str, str]) -> Child:
    """The verdict's step by name (its kind and name as the step list shows them), linking to its row; a step not
    in the stored list (cut at the cap) by its short span id."""
    if not span_id:
        return ""
    shown = names.get(span_id) or f"span {fmt.short_id(span_id, 8)}"
    return el("a", shown, href=f"#{span_anchor(span_id)}", title=f"span {span_id}")


def verdict_row(
    item: ResultItem,
    names: Mapping[str, str] | None = None,
    reviews: Reviews | None = None,
    forms: ReviewForms | None = None,
) -> Html:
    """A verdict's row; with `reviews` and `forms`, its review column."""
    where = join(item.level, f" · {item.agent}" if item.agent else None, f" · {item.model}" if item.model else None)
    step = step_link(item.span_id, names or {})
    cells = [
        el("td", item.evaluator),
        el("td", el("span", item.outcome, class_=f"badge {item.outcome}"), f" {item.skip_reason or ''}"),
        el("td", fmt.score(item.score), class_="num"),
        el("td", where),
        el("td", long_text(item.explanation, 400), partner(item.details), class_="text"),
        el("td", step, class_="id"),
        review_cell(item, reviews, forms, full=True) if reviews is not None and forms is not None else None,
    ]
    return el("tr", cells, class_=f"row-{item.outcome}")


def verdicts_table(
    results: list[ResultItem],
    steps: Sequence[Step] = (),
    reviews: Reviews | None = None,
    forms: ReviewForms | None = None,
) -> Html:
    """The verdicts, failing first; a review column when reviews can be written or some verdict has one."""
    if not results:
        return el("p", "No results stored for this trace.")
    names = {step.span_id: f"{step.kind} {step.name}".strip() for step in steps}
    ordered = sorted(results, key=lambda r: (ORDER.get(r.outcome, 3), r.evaluator, r.span_id or ""))
    reviews = reviews or Reviews()
    forms = forms or ReviewForms()
    column = forms.enabled or bool(reviews.in_force)
    headings = ("evaluator", "outcome", "score", "level", "explanation", "step", *(["review"] if column else []))
    head = el("tr", [el("th", h) for h in headings])
    rows = [verdict_row(r, names, reviews if column else None, forms) for r in ordered]
    return join(forms_note(forms, reviews), el("table", el("thead", head), el("tbody", rows), class_="verdicts"))


def count(tokens: int | None) -> str:
    """A token count; "unknown" when the usage was not recorded (never a made-up 0)."""
    return "unknown" if tokens is None else str(tokens)


def tokens(step: Step) -> str:
    if step.input_tokens is None and step.output_tokens is None:
        return "usage unknown" if step.kind == "llm" else ""
    return f"{count(step.input_tokens)} → {count(step.output_tokens)} tok"


def step_row(step: Step, unpriced: bool = False) -> Html:
    """One step; `unpriced`: the trace has unpriced calls, so an LLM call with usage and no cost is marked (a trace
    stored before spend was kept has no costs, and no call is called unpriced)."""
    depth = min(step.depth, MAX_INDENT)
    name = el("td", el("span", step.kind, class_=f"kind {step.kind}"), " ", step.name, class_=f"step d{depth}")
    model = join(step.model or "", el("br") if step.model and tokens(step) else None, tokens(step))
    if step.cost_usd is not None:
        model = join(model, el("br"), cost(step.cost_usd, source=step.cost_source))
    elif unpriced and step.kind == "llm" and step.input_tokens is not None:  # usage, and no price for it
        model = join(model, el("br"), el("span", "unpriced", class_="cost unpriced"))
    cells = [
        name,
        el("td", fmt.duration_ms(step.start_offset_ms), class_="num"),
        el("td", fmt.duration_ms(step.duration_ms), class_="num"),
        el("td", model),
        el("td", long_text(step.error), class_="err" if step.error else None),
        el("td", long_text(step.text), class_="text"),
    ]
    return el("tr", cells, id=span_anchor(step.span_id), class_="step-error" if step.error else None)


def steps_table(detail: TraceDetail) -> Html:
    if not detail.steps:
        return el("p", "No steps stored for this trace.")
    head = el("tr", [el("th", h) for h in ("step", "start", "duration", "model / tokens / cost", "error", "text")])
    table = el(
        "table",
        el("thead", head),
        el("tbody", [step_row(s, detail.summary.unpriced_calls > 0) for s in detail.steps]),
        class_="steps",
    )
    note = el("p", "The step list was cut at the store's size cap.", class_="warn")
    return join(table, note if detail.summary.steps_truncated else None)


def trace_page(
    site: ReviewSite,
    detail: TraceDetail,
    session_id: str | None = None,
    reviews: Reviews | None = None,
    forms: ReviewForms | None = None,
) -> Html:
    """The trace page; `session_id`: the stored conversation the trace is a turn of (a link to its page);
    `reviews` of its verdicts and the review `forms` the request may have."""
    summary = detail.summary
    conversation = None
    if session_id is not None:
        href = f"{ROOT}/sessions/{quote(session_id, safe='')}"
        conversation = el(
            "p", "A turn of conversation ", el("a", fmt.clip(session_id, 80), href=href), class_="session-link"
        )
    trace_url = site.config.trace_url(summary.trace_id)
    ui = el("a", "open in trace UI ↗", href=trace_url, class_="trace-ui", rel="noreferrer") if trace_url else None
    agents = agents_table(summary)
    main = [
        el("h1", "Trace ", el("code", summary.trace_id), " ", ui),
        conversation,
        summary_block(summary),
        errors_list(summary),
        el("h2", "Verdicts", id=VERDICTS),
        verdicts_table(detail.results, detail.steps, reviews, forms),
        el("h2", "Steps"),
        steps_table(detail),
        io_block(summary),
        el("h2", "Models") if summary.models else None,
        models_table(summary),
        el("h2", "Agents") if agents is not None else None,
        agents,
    ]
    return shell(site, f"trace {fmt.short_id(summary.trace_id)}", main, active="trace")
