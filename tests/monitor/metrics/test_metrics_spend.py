"""Spend and token-kind metrics through the daemon's path (TraceEvaluator → tally → exporter): each call's cost is
genai-prices' own figure (computed here from the library), an override wins, a span-reported cost wins over both,
an unknown model is counted unpriced (never 0), tokens split into disjoint kinds, and the agent is a label."""

from __future__ import annotations

from datetime import UTC, datetime

import genai_prices
import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics

from evaluators.pricing import ModelPrice
from monitor.engine.batch_run import trace_tally
from monitor.engine.trace_evaluation import TraceEvaluator
from monitor.metrics import MetricsExporter
from tests.support.builtins_spans import agent, chat
from tests.support.metrics_scrape import samples, value
from tests.support.spanfactory import DEFAULT_TRACE_ID, make_span, trace_of

START_NS = int(datetime(2025, 9, 1, tzinfo=UTC).timestamp() * 1e9)


def _apply(*spans, prices=None) -> MetricsExporter:
    exporter = MetricsExporter()
    outcome = TraceEvaluator([], prices=prices).outcome(trace_of(*spans))
    exporter.results.apply_tally(trace_tally([outcome]))
    return exporter


def _library(model: str, inputs: int, outputs: int, cache_read: int = 0) -> float:
    usage = genai_prices.Usage(input_tokens=inputs, output_tokens=outputs, cache_read_tokens=cache_read)
    when = datetime.fromtimestamp(START_NS / 1e9, UTC)
    return float(genai_prices.calc_price(usage, model, genai_request_timestamp=when).total_price)


def test_cost_by_agent_and_model_is_the_librarys_figure_and_tokens_split_by_kind() -> None:
    planner = agent("planner")
    cached = {"gen_ai.usage.cache_read.input_tokens": 600, "gen_ai.usage.reasoning.output_tokens": 15}
    m = _apply(
        planner,
        chat("a", model="gpt-4o", input_tokens=1000, output_tokens=50, parent=planner, start=START_NS, **cached),
        chat("b", model="gpt-4o-mini", input_tokens=300, output_tokens=20, parent=planner, start=START_NS + 10),
    )
    cost = value(m, "agent_llm_cost_usd_total", service="unknown", agent="planner", model="gpt-4o", provider="openai")
    assert cost == pytest.approx(_library("gpt-4o", 1000, 50, cache_read=600), rel=1e-12)
    mini = value(
        m, "agent_llm_cost_usd_total", service="unknown", agent="planner", model="gpt-4o-mini", provider="openai"
    )
    assert mini == pytest.approx(_library("gpt-4o-mini", 300, 20), rel=1e-12)
    kinds = {
        (s.labels["direction"], s.labels["kind"]): s.value
        for s in samples(m, "agent_llm_tokens_total")
        if s.labels["model"] == "gpt-4o" and s.labels["agent"] == "planner"
    }
    assert kinds == {("input", "input"): 400, ("input", "cache_read"): 600, ("output", "output"): 35,
                     ("output", "reasoning"): 15}  # fmt: skip
    assert value(m, "agent_trace_cost_usd_count", service="unknown") == 1
    assert value(m, "agent_trace_cost_usd_sum", service="unknown") == pytest.approx(cost + mini)
    body = m.render("application/openmetrics-text")[0].decode()
    buckets = [s for f in parse_openmetrics(body) for s in f.samples if s.name == "agent_trace_cost_usd_bucket"]
    exemplars = [s.exemplar for s in buckets if s.exemplar is not None]
    assert exemplars and {e.labels["trace_id"] for e in exemplars} == {DEFAULT_TRACE_ID}


def test_unknown_model_is_counted_unpriced_never_zero() -> None:
    m = _apply(chat("a", model="my-private-llm", start=START_NS), chat("b", model="gpt-4o", start=START_NS + 5))
    assert value(m, "agent_llm_unpriced_calls_total", service="unknown", model="my-private-llm") == 1
    assert not [s for s in samples(m, "agent_llm_cost_usd_total") if s.labels["model"] == "my-private-llm"]
    assert value(m, "agent_llm_unpriced_calls_total", service="unknown", model="gpt-4o") is None


def test_an_override_wins_and_a_span_cost_wins_over_it() -> None:
    prices = {"my-private-llm": ModelPrice(input=1.0, output=2.0), "gpt-4o": ModelPrice(input=0.0, output=0.0)}
    oi = {"openinference.span.kind": "LLM", "llm.model_name": "gpt-4o", "llm.provider": "openai"}
    usage = {"llm.token_count.prompt": 10, "llm.token_count.completion": 10}
    reported = make_span("ChatCompletion", {**oi, **usage, "llm.cost.total": 0.5}, kind=3)
    m = _apply(chat("a", model="my-private-llm", input_tokens=1_000_000, output_tokens=0), reported, prices=prices)
    spent = value(m, "agent_llm_cost_usd_total", service="unknown", agent="", model="my-private-llm", provider="openai")
    assert spent == pytest.approx(1.0)
    reported_cost = value(m, "agent_llm_cost_usd_total", service="unknown", agent="", model="gpt-4o", provider="openai")
    assert reported_cost == pytest.approx(0.5)  # the span's own cost, not the gpt-4o override's 0
    assert value(m, "agent_llm_unpriced_calls_total", service="unknown", model="my-private-llm") is None


def test_a_call_without_usage_is_neither_priced_nor_unpriced() -> None:
    m = _apply(chat("a", model="gpt-4o", input_tokens=None, output_tokens=None))
    assert value(m, "agent_llm_calls_total", service="unknown", model="gpt-4o", outcome="ok") == 1
    assert not samples(m, "agent_llm_cost_usd_total") and not samples(m, "agent_llm_unpriced_calls_total")
    assert value(m, "agent_trace_cost_usd_count", service="unknown") is None
