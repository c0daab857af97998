"""Property: no text from the store ever becomes markup on any review page, whatever it contains."""

from __future__ import annotations

import json
from html.parser import HTMLParser

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from monitor.config.review import ReviewConfig
from monitor.review.models import (
    Breakdown,
    BreakdownGroup,
    ErrorSpan,
    EvaluatorStatus,
    EvaluatorWindow,
    ModelUsage,
    ResultFilter,
    ResultItem,
    ResultsPage,
    Step,
    TraceDetail,
    TraceSummary,
)
from monitor.web.pages.breakdown import breakdown_page
from monitor.web.pages.layout import ReviewSite
from monitor.web.pages.login import login_form
from monitor.web.pages.results import results_page
from monitor.web.pages.trace import trace_page

SENTINEL = "<zz-data x=1>"  # starts every data string: seen as a tag only if that string went out unescaped
TAGS = {
    "html", "head", "body", "meta", "title", "link", "header", "strong", "nav", "a", "form", "button", "span",
    "main", "h1", "h2", "h3", "p", "label", "select", "option", "input", "datalist", "table", "thead", "tbody",
    "tr", "th", "td", "br", "dl", "dt", "dd", "ul", "li", "div", "section", "pre", "code", "details", "summary",
}  # fmt: skip
ATTRS = {
    "charset", "name", "content", "rel", "href", "class", "method", "action", "type", "id", "value", "selected",
    "placeholder", "list", "title", "lang", "autofocus", "autocomplete", "required",
}  # fmt: skip
NASTY = [
    "<",
    ">",
    "&",
    '"',
    "'",
    "<script>alert(1)</script>",
    '" onmouseover="x',
    "<a href=javascript:x>",
    "&lt;",
    "\x00",
]
texts = st.lists(st.one_of(st.text(max_size=40), st.sampled_from(NASTY)), max_size=6).map("".join)
data = texts.map(lambda t: SENTINEL + t)
long_data = st.tuples(data, st.integers(0, 500)).map(lambda p: p[0] + "x" * p[1])  # past every clip length
trace_id = st.text("0123456789abcdefABCDEF", min_size=32, max_size=32)
partner_details = st.fixed_dictionaries(  # a pairwise judge's details: the partner's id becomes a link
    {"partner_trace_id": data | trace_id, "partner_variant": data | st.integers()}
).map(json.dumps)


class Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: set[str] = set()
        self.attrs: set[str] = set()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.attrs.update(name for name, _ in attrs)
        self.hrefs += [value or "" for name, value in attrs if name in ("href", "action")]


def check(page: str) -> None:
    assert "<zz-data" not in page
    parser = Collector()
    parser.feed(page)
    parser.close()
    assert parser.tags <= TAGS, parser.tags - TAGS
    assert parser.attrs <= ATTRS, parser.attrs - ATTRS
    for href in parser.hrefs:
        assert href.startswith(("/", "?", "#", "http://jaeger.example/")), href


def site(names: list[str]) -> ReviewSite:
    infos = [EvaluatorStatus(name=n, kind="rule", level="trace") for n in names]
    config = ReviewConfig(trace_url_template="http://jaeger.example/trace/{trace_id}")
    return ReviewSite(None, lambda: infos, config, "token")


result_items = st.builds(
    ResultItem,
    trace_id=data,
    evaluated_at=st.floats(0, 2e9),
    evaluator=data,
    level=data,
    outcome=st.sampled_from(["pass", "fail", "skip"]),
    score=st.none() | st.floats(0, 1),
    skip_reason=st.none() | data,
    explanation=st.none() | long_data,
    details=st.none() | data | partner_details,
    service=st.none() | data,
    variant=st.just("") | data,
    agent=st.none() | data,
    model=st.none() | data,
    span_id=st.none() | data,
    input_excerpt=st.none() | long_data,
    output_excerpt=st.none() | long_data,
)
steps = st.builds(
    Step,
    span_id=data,
    parent_span_id=st.none() | data,
    depth=st.integers(0, 40),
    kind=st.sampled_from(["agent", "llm", "tool", "retrieval", "handoff", "span"]),
    name=data,
    error=st.none() | long_data,
    model=st.none() | data,
    input_tokens=st.none() | st.integers(0, 10**6),
    text=st.none() | long_data,
)
summaries = st.builds(
    TraceSummary,
    trace_id=data,
    evaluated_at=st.floats(0, 2e9),
    service=st.none() | data,
    variant=st.just("") | data,
    agents=st.lists(data, max_size=2),
    input=st.none() | long_data,
    output=st.none() | long_data,
    has_errors=st.booleans(),
    models=st.lists(st.builds(ModelUsage, model=data, calls=st.integers(0, 9), input_tokens=st.integers(0, 9),
                              output_tokens=st.integers(0, 9)), max_size=2),
    tools=st.lists(data, max_size=2),
    errors=st.lists(st.builds(ErrorSpan, span_id=data, name=data, kind=st.just("tool"), error=long_data), max_size=2),
    steps_truncated=st.booleans(),
)  # fmt: skip
query_values = st.dictionaries(
    st.sampled_from(["evaluator", "service", "variant", "agent", "model", "since", "until", "cursor"]), data
)
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(st.lists(result_items, max_size=4), st.lists(data, max_size=3), query_values, st.none() | data)
def test_results_page_escapes_every_field(items, names, query, cursor) -> None:
    evaluator = names[0] if names else None
    infos = [
        EvaluatorStatus(name=n, kind=n, level=n, alert_min_pass_ratio=0.9, alert_state="firing",
                      windows=[EvaluatorWindow(window=n, samples=1, pass_ratio=0.5)])
        for n in names
    ]  # fmt: skip
    where = ResultFilter(evaluator=evaluator, variant=query.get("variant"), outcome="fail")
    page = ResultsPage(items=items, next_cursor=cursor)
    check(str(results_page(site(names), {**query, "cursor": cursor or ""}, where, page, infos)))


@FAST
@given(summaries, st.lists(steps, max_size=5), st.lists(result_items, max_size=4))
def test_trace_page_escapes_every_field(summary, step_list, items) -> None:
    check(str(trace_page(site([]), TraceDetail(summary=summary, steps=step_list, results=items))))


@FAST
@given(
    st.lists(st.builds(BreakdownGroup, value=data, passed=st.integers(0, 9), failed=st.integers(0, 9),
                       skipped=st.integers(0, 9), pass_ratio=st.none() | st.floats(0, 1)), max_size=4),
    st.sampled_from(["service", "agent", "model", "tool", "variant"]),
    query_values,
    st.lists(data, max_size=3),
)  # fmt: skip
def test_breakdown_page_escapes_every_field(groups, by, params, names) -> None:
    result = Breakdown(by=by, groups=groups, evaluator=params.get("evaluator"), variant=params.get("variant"))
    check(str(breakdown_page(site(names), params, result)))


@FAST
@given(data)
def test_login_form_escapes_next_and_message(text) -> None:
    check(str(login_form("/review?x=" + text, text)))


def test_the_sentinel_would_be_caught() -> None:
    """The check itself fails on unescaped data (so the properties above can fail)."""
    try:
        check(f"<p>{SENTINEL}</p>")
    except AssertionError:
        return
    raise AssertionError("check() accepted unescaped data")
