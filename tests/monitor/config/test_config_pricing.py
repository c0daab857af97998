"""The `pricing` config section: overrides in USD per 1K or 1M tokens, what check-config says, located errors,
and the same overrides reach the metrics' pricing and the cost_budget rule (they never disagree)."""

from __future__ import annotations

import json

import pytest

from evaluators.pricing import ModelPrice
from monitor.config import MonitorConfig
from monitor.engine.batch_run import trace_tally
from monitor.engine.evaluator_setup import build_evaluators
from monitor.engine.trace_evaluation import TraceEvaluator
from monitor.metrics import MetricsExporter
from tests.support.builtins_spans import chat
from tests.support.metrics_scrape import value
from tests.support.spanfactory import trace_of

OVERRIDE = (
    "pricing:\n  models:\n    my-llm: {input: 0.5, output: 1.5, per: 1K}\n    gpt-4o: {input: 2, output: 8, per: 1M}\n"
)


def test_overrides_are_per_1m_whatever_unit_they_are_written_in() -> None:
    config = MonitorConfig.model_validate(
        {"pricing": {"models": {"a": {"input": 0.5, "output": 1.5, "per": "1k"}, "b": {"input": 2, "output": 8,
                                                                                      "cache_read": 1, "per": "1M"}}}}
    )  # fmt: skip
    assert config.pricing.overrides() == {
        "a": ModelPrice(input=500.0, output=1500.0),
        "b": ModelPrice(input=2.0, output=8.0, cache_read=1.0),
    }


def test_check_config_names_the_table_and_the_overrides(check) -> None:
    code, out, err, _ = check(OVERRIDE)
    assert code == 0, err
    (line,) = [row for row in out.splitlines() if row.startswith("prices: ")]
    assert line.startswith("prices: genai-prices ") and "bundled table" in line, out
    assert "my-llm $0.5 in / $1.5 out per 1K" in line and "gpt-4o $2 in / $8 out per 1M" in line


@pytest.mark.parametrize(
    "text, line, message",
    [
        ("pricing:\n  models:\n    my-llm: {input: 1, output: 2}\n", 3, "pricing.models.my-llm.per: required"),
        ("pricing:\n  models:\n    a: {input: 1, output: 2, per: 1M}\n    b: {input: -1, output: 2, per: 1M}\n", 4,
         "pricing.models.b.input: input should be greater than or equal to 0"),
        ("pricing:\n  models:\n    my-llm: {input: one, output: 2, per: 1M}\n", 3, "pricing.models.my-llm.input"),
        ("pricing:\n  models:\n    my-llm: {input: 1, output: 2, per: 1G}\n", 3, "pricing.models.my-llm.per"),
        ("pricing:\n  models:\n    my-llm: {input: 1, output: 2, per: 1M, currency: EUR}\n", 3, "currency"),
        ("pricing:\n  modles: {}\n", 2, "pricing.modles"),
    ],
)  # fmt: skip
def test_a_malformed_override_is_a_located_error(check, text: str, line: int, message: str) -> None:
    code, out, err, path = check(text)
    assert code == 2 and out == ""
    assert any(row.startswith(f"{path}:{line}: ") and message in row for row in err.splitlines()), err


def test_an_override_changes_the_metric_and_the_rule_alike() -> None:
    """The same gpt-4o call priced by the table, then by an override: the spend metric and cost_budget move
    together and agree to the cent."""
    spans = [chat("a", model="gpt-4o", input_tokens=100_000, output_tokens=10_000)]
    figures = []
    for text in ({}, {"pricing": {"models": {"gpt-4o": {"input": 10, "output": 10, "per": "1K"}}}}):
        config = MonitorConfig.model_validate({**text, "evaluators": [{"name": "cost_budget"}]})
        built, problems = build_evaluators(config.evaluator_entries(), config.pricing.overrides())
        assert not problems
        evaluator = TraceEvaluator.from_config(built, config)
        outcome = evaluator.outcome(trace_of(*spans))
        exporter = MetricsExporter()
        exporter.results.apply_tally(trace_tally([outcome]))
        spent = value(exporter, "agent_llm_cost_usd_total", service="unknown", agent="", model="gpt-4o",
                      provider="openai")  # fmt: skip
        (row,) = outcome.results
        rule = json.loads(row.details)["cost_usd"]
        assert spent == pytest.approx(rule, rel=1e-12)
        figures.append(spent)
    assert figures[0] == pytest.approx((100_000 * 2.5 + 10_000 * 10) / 1e6)  # the table's gpt-4o list price
    assert figures[1] == pytest.approx(110_000 * 10 / 1000)  # the override's
