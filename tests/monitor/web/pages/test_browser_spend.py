"""Spend on the review page, in a real headless Chromium: corpus traces of four libraries evaluated by the
TraceEvaluator into a real SQLite store and read back by the page. Each LLM call's cost and the trace's total
shown equal genai-prices' own figures for the call's usage, computed here from the library; the breakdown by
model shows spend and sorts by it."""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import genai_prices
import pytest

from evaluators import load_traces
from evaluators.sdk import builtin
from evaluators.traces import Trace
from monitor.engine.configured import ConfiguredEvaluator
from monitor.review.sqlite_reader import SQLiteReviewReader
from monitor.web.pages import fmt
from monitor.web.pages.results import span_anchor
from tests.conftest import CORPUS
from tests.monitor.web.pages.test_browser import TIMEOUT_MS, browser  # noqa: F401  (the Chromium fixture)
from tests.support.metrics_port import review_app, serve, store_evaluated

pytestmark = pytest.mark.integration

TOKEN = "spend-review-token"
SCENARIOS = ("oi_openai__tool_agent", "otel_genai__tool_agent", "adk_native__tool_agent", "strands__tool_agent")


def library_cost(trace: Trace) -> dict[str, float]:
    """Each LLM call's cost by its step's row id, from genai-prices itself (the call's model, usage, start)."""
    costs = {}
    for call in trace.get_llm_calls():
        usage = call.usage
        assert usage is not None and call.model
        read = usage.cache_read_tokens or 0
        priced = genai_prices.calc_price(
            genai_prices.Usage(
                input_tokens=usage.input_tokens, cache_read_tokens=read, output_tokens=usage.output_tokens
            ),
            call.model,
            genai_request_timestamp=datetime.fromtimestamp(call.start_time / 1e9, UTC),
        )
        costs[span_anchor(call.span_id)] = float(priced.total_price)
    return costs


@pytest.fixture
def stored(tmp_path: Path) -> Iterator[tuple[str, list[Trace]]]:
    traces = [t for scenario in SCENARIOS for t in load_traces([CORPUS / scenario])]
    path = tmp_path / "results.db"
    store_evaluated(path, traces, [ConfiguredEvaluator(builtin("error_free"), "error_free")])
    reader = SQLiteReviewReader.open(path)
    try:
        with serve(review_app(reader, TOKEN)) as base:
            yield base, traces
    finally:
        reader.close()


def test_costs(browser, stored, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811  (short: Chromium's socket path)
    base, traces = stored
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.set_default_timeout(TIMEOUT_MS)
    first = traces[0]
    page.goto(f"{base}/review/login?next=/review/traces/{first.trace_id}")
    page.fill("#token", TOKEN)
    with page.expect_navigation():
        page.click("form.login button")
    for trace in traces:
        expected = library_cost(trace)
        page.goto(f"{base}/review/traces/{trace.trace_id}")
        shown = page.eval_on_selector_all(
            "table.steps tbody tr[id]",
            "rows => rows.filter(r => r.querySelector('.cost[data-usd]'))"
            ".map(r => [r.id, Number(r.querySelector('.cost[data-usd]').dataset.usd),"
            " r.querySelector('.cost[data-usd]').innerText])",
        )
        # the library's figures (the pricing reads a model's affine price from the library: equal to the last bit
        # or two of a double)
        assert {row: usd for row, usd, _ in shown} == pytest.approx(expected, rel=1e-12), trace.trace_id
        for _, usd, text in shown:
            assert text.startswith(fmt.usd(usd)) and "genai-prices table" in text
        total = page.locator("#trace-cost .cost")
        assert float(total.get_attribute("data-usd") or "nan") == pytest.approx(math.fsum(expected.values()), rel=1e-12)
        assert total.inner_text() == fmt.usd(math.fsum(expected.values()))
        models = page.locator("table.models tbody tr").all_inner_texts()
        assert models and all("$" in row for row in models)
    page.screenshot(path=str(tmp_path / "trace-spend.png"), full_page=True)

    page.goto(f"{base}/review/breakdown?by=model&sort=cost")
    assert page.locator("select[name=sort]").input_value() == "cost"
    rows = page.eval_on_selector_all(
        "table.breakdown tbody tr",
        "rows => rows.map(r => [r.cells[0].innerText, Number(r.querySelector('.cost[data-usd]')?.dataset.usd ?? 0)])",
    )
    by_model: dict[str, float] = {}
    for trace in traces:
        for call in trace.get_llm_calls():
            assert call.model
            by_model[call.model] = by_model.get(call.model, 0.0) + library_cost(trace)[span_anchor(call.span_id)]
    assert [name for name, _ in rows] == sorted(by_model, key=lambda m: -by_model[m])  # the most spend first
    assert {name: pytest.approx(usd, rel=1e-9) for name, usd in rows} == by_model
    page.screenshot(path=str(tmp_path / "breakdown-spend.png"), full_page=True)
    page.close()
