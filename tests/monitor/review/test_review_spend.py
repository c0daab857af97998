"""Spend in the review, on SQLite and PostgreSQL: each LLM call's cost and its source, the trace's total and its
spend per model and agent go through the store and back; the breakdown sums them per group and sorts by cost;
a trace stored before spend was kept still reads. Prices are genai-prices' own figures, computed here."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import genai_prices
import pytest

from evaluators.pricing import ModelPrice
from evaluators.sdk import builtin
from evaluators.traces import Trace
from monitor.engine.configured import ConfiguredEvaluator
from monitor.engine.trace_evaluation import TraceEvaluator
from monitor.outcomes import TraceOutcome
from monitor.review.of_store import reader_of
from tests.support.backends import Backend
from tests.support.spanfactory import make_span, trace_of

PRICES = {"my-llama-*": ModelPrice(input=1.0, output=4.0)}  # USD per 1M tokens (a pricing.models override)


def library(model: str, tokens_in: int, tokens_out: int, start_ns: int) -> float:
    usage = genai_prices.Usage(input_tokens=tokens_in, output_tokens=tokens_out)
    when = datetime.fromtimestamp(start_ns / 1e9, UTC)
    return float(genai_prices.calc_price(usage, model, genai_request_timestamp=when).total_price)


def spend_trace(trace_id: str, service: str = "shop", tokens: int = 1) -> Trace:
    """planner (gpt-4o, table price) hands to booker (my-llama-3, override; mystery-model, unpriced) and a call
    outside any agent reports its own cost (OpenInference llm.cost.total)."""
    resource = {"service.name": service}
    root = make_span("invoke_agent planner", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner"},
                     trace_id=trace_id, resource=resource)  # fmt: skip

    booker = make_span("invoke_agent booker", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "booker"},
                       trace_id=trace_id, parent=root, resource=resource)  # fmt: skip

    def chat(model: str, agent: object, usage: tuple[int, int]) -> object:
        attributes = {"gen_ai.operation.name": "chat", "gen_ai.request.model": model,
                      "gen_ai.usage.input_tokens": usage[0] * tokens,
                      "gen_ai.usage.output_tokens": usage[1] * tokens}  # fmt: skip
        return make_span(f"chat {model}", attributes, trace_id=trace_id, parent=agent, resource=resource)

    reported = make_span(
        "llm",
        {"openinference.span.kind": "LLM", "llm.model_name": "gpt-4o-mini", "llm.cost.total": 0.25,
         "llm.token_count.prompt": 10, "llm.token_count.completion": 5},
        trace_id=trace_id, resource=resource,
    )  # fmt: skip
    spans = [root, chat("gpt-4o", root, (1000, 100)), booker, chat("my-llama-3", booker, (2000, 500)),
             chat("mystery-model-x", booker, (50, 5)), reported]  # fmt: skip
    return trace_of(*spans)  # type: ignore[arg-type]


def evaluated(trace: Trace) -> TraceOutcome:
    evaluator = TraceEvaluator([ConfiguredEvaluator(builtin("error_free"), "error_free")], store_results="all",
                               prices=PRICES)  # fmt: skip
    return evaluator.outcome(trace)


def test_each_calls_cost_and_the_traces_spend_go_through_the_store(backend: Backend) -> None:
    trace = spend_trace("a1" * 16)
    store = backend.store()
    store.write([evaluated(trace)])
    got = reader_of(store).trace(trace.trace_id)
    assert got is not None
    [gpt4o] = [c for c in trace.get_llm_calls() if c.model == "gpt-4o"]
    table = library("gpt-4o", 1000, 100, gpt4o.start_time)
    override = (2000 * 1.0 + 500 * 4.0) / 1e6
    calls = {s.model: (s.cost_usd, s.cost_source) for s in got.steps if s.kind == "llm"}
    assert calls == {
        "gpt-4o": (table, "price_table"),
        "my-llama-3": (pytest.approx(override, rel=1e-12), "override"),
        "mystery-model-x": (None, None),
        "gpt-4o-mini": (0.25, "span"),
    }
    s = got.summary
    assert s.cost_usd == pytest.approx(table + override + 0.25, rel=1e-12) and s.unpriced_calls == 1
    models = {m.model: (m.calls, m.cost_usd, m.unpriced_calls) for m in s.models}
    assert models == {
        "gpt-4o": (1, table, 0),
        "my-llama-3": (1, pytest.approx(override, rel=1e-12), 0),
        "mystery-model-x": (1, None, 1),  # unpriced: counted, never priced at 0
        "gpt-4o-mini": (1, 0.25, 0),
    }
    agents = {a.agent: (a.calls, a.cost_usd, a.unpriced_calls) for a in s.agent_spend}
    assert agents == {
        "planner": (1, table, 0),
        "booker": (2, pytest.approx(override, rel=1e-12), 1),
        "": (1, 0.25, 0),  # the call outside any agent
    }


def test_the_breakdown_sums_spend_per_group_and_sorts_by_cost(backend: Backend) -> None:
    traces = [spend_trace("b1" * 16, "shop"), spend_trace("b2" * 16, "shop"), spend_trace("b3" * 16, "bank", 10)]
    store = backend.store()
    store.write([evaluated(t) for t in traces])
    reader = reader_of(store)
    per_trace = [evaluated(t).detail for t in traces]

    def spend(by: str, sort: str = "failures") -> dict[str, tuple[int, float | None, int]]:
        groups = reader.breakdown(by, sort=sort).groups  # type: ignore[arg-type]
        return {g.value: (g.calls, g.cost_usd, g.unpriced_calls) for g in groups}

    def model_cost(model: str) -> float:
        return sum(m[4] for d in per_trace for m in d.models if m[0] == model)

    assert spend("model") == {
        "gpt-4o": (3, pytest.approx(model_cost("gpt-4o"), rel=1e-12), 0),
        "my-llama-3": (3, pytest.approx(model_cost("my-llama-3"), rel=1e-12), 0),
        "mystery-model-x": (3, None, 3),
        "gpt-4o-mini": (3, pytest.approx(0.75), 0),
    }
    shop, bank = (sum(d.cost_usd for d in per_trace[:2]), per_trace[2].cost_usd)
    assert spend("service") == {"shop": (8, pytest.approx(shop, rel=1e-12), 2), "bank": (4, pytest.approx(bank), 1)}
    assert spend("agent")["booker"][0] == 6 and spend("agent")["booker"][2] == 3
    by_cost = reader.breakdown("model", sort="cost")
    assert by_cost.sort == "cost"
    costs = [g.cost_usd or 0.0 for g in by_cost.groups]
    assert costs == sorted(costs, reverse=True) and by_cost.groups[-1].value == "mystery-model-x"
    assert shop > bank and [g.value for g in reader.breakdown("service", sort="cost").groups] == ["shop", "bank"]
    with pytest.raises(ValueError):
        reader.breakdown("model", sort="tokens")  # type: ignore[arg-type]


def test_a_trace_stored_before_spend_was_kept_reads_without_costs(backend: Backend) -> None:
    trace = spend_trace("c1" * 16)
    store = backend.store()
    store.write([evaluated(trace)])
    store.close()
    [(detail,)] = backend.rows("SELECT detail FROM traces")
    old = json.loads(detail) if isinstance(detail, str) else detail
    old = {  # the detail as the release before spend wrote it: 4-value models, 12-value steps, no cost keys
        "models": [m[:4] for m in old["models"]],
        "errors": old["errors"],
        "steps": [s[:12] for s in old["steps"]],
        "truncated": old["truncated"],
    }
    backend.execute("UPDATE traces SET detail = ?", (json.dumps(old),))
    reader = backend.reader()
    got = reader.trace(trace.trace_id)
    assert got is not None
    assert got.summary.cost_usd is None and got.summary.unpriced_calls == 0 and got.summary.agent_spend == []
    assert all(m.cost_usd is None for m in got.summary.models) and all(s.cost_usd is None for s in got.steps)
    groups = reader.breakdown("model").groups
    assert {g.value: (g.calls, g.cost_usd) for g in groups} == {
        "gpt-4o": (1, None), "my-llama-3": (1, None), "mystery-model-x": (1, None), "gpt-4o-mini": (1, None)
    }  # fmt: skip
    agents = reader.breakdown("agent").groups  # the trace's verdict counts for its first agent; no spend stored
    assert [(g.value, g.passed, g.calls, g.cost_usd) for g in agents] == [("planner", 1, 0, None)]
