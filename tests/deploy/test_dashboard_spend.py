"""The dashboard's *Spend* row (issue 26): its panels, units and queries, and the *Cost per passing trace* query run
by `promtool` over written series (spend ÷ passes; no point, never +Inf, without a pass). That every panel of the
row shows data from the real daemon is tests/deploy/test_dashboard.py's live test (its KEY_PANELS)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.deploy.test_dashboard import load_dashboard, panel, row_panels
from tests.support.alert_rules import cumulative, promtool, series

SPEND_PANELS = [
    "Spend by agent and model",
    "Cost per trace p50, p95",
    "Cost per passing trace",
    "Unpriced LLM calls",
    "Judge spend",
    "Tokens by kind",
    "Spend in the time range",
]
USD = {"Spend by agent and model", "Cost per trace p50, p95", "Cost per passing trace", "Judge spend"}
FILTERS = 'service=~"$service", agent=~"$agent"'


def test_the_spend_row_has_its_panels_in_dollars():
    assert row_panels("Spend") == SPEND_PANELS
    dashboard = load_dashboard()
    for title in [*USD, "Spend in the time range"]:
        assert panel(dashboard, title)["fieldConfig"]["defaults"]["unit"] == "currencyUSD", title


def test_spend_is_per_hour_by_agent_and_model_and_judge():
    dashboard = load_dashboard()
    [spend] = panel(dashboard, "Spend by agent and model")["targets"]
    rate = f"rate(agent_llm_cost_usd_total{{{FILTERS}}}[$__rate_interval])"
    assert spend["expr"] == f"sum by (agent, model) ({rate}) * 3600"
    [judges] = panel(dashboard, "Judge spend")["targets"]
    rate = "rate(agent_monitor_judge_cost_usd_total[$__rate_interval])"
    assert judges["expr"] == f"sum by (judge, model) ({rate}) * 3600"
    [total] = panel(dashboard, "Spend in the time range")["targets"]
    assert total["instant"] and total["expr"].startswith("sum by (agent, model) (increase(agent_llm_cost_usd_total{")
    [unpriced] = panel(dashboard, "Unpriced LLM calls")["targets"]
    assert unpriced["instant"] and "increase(agent_llm_unpriced_calls_total{" in unpriced["expr"]


def test_cost_per_trace_percentiles_come_from_the_histogram_with_exemplars():
    p50, p95 = panel(load_dashboard(), "Cost per trace p50, p95")["targets"]
    buckets = 'sum by (le, service) (rate(agent_trace_cost_usd_bucket{service=~"$service"}[$__rate_interval]))'
    assert p50["expr"] == f"histogram_quantile(0.5, {buckets})" and not p50.get("exemplar")
    assert p95["expr"] == f"histogram_quantile(0.95, {buckets})" and p95["exemplar"]


def test_the_token_panels_filter_by_agent_and_keep_the_direction():
    dashboard = load_dashboard()
    for title in ("Tokens by model and direction", "Tokens in the time range"):
        [target] = panel(dashboard, title)["targets"]
        assert target["expr"].startswith("sum by (model, direction) (") and FILTERS in target["expr"], title
    [kinds] = panel(dashboard, "Tokens by kind")["targets"]
    assert kinds["expr"] == f"sum by (kind) (rate(agent_llm_tokens_total{{{FILTERS}}}[$__rate_interval]))"


@pytest.mark.integration
def test_cost_per_passing_trace_is_spend_over_passes_and_absent_without_a_pass(tmp_path: Path) -> None:
    """promtool evaluates the panel's query: the service's spend over the hour (both its agents) ÷ each
    evaluator's passes over the hour; an evaluator that only fails, and a service with no results, get no
    sample (not +Inf)."""
    [target] = panel(load_dashboard(), "Cost per passing trace")["targets"]
    expr = target["expr"]
    for variable in ("$service", "$agent", "$evaluator"):
        expr = expr.replace(variable, ".*")
    cost, results = "agent_llm_cost_usd_total", "agent_eval_results_total"
    minutes = 90
    inputs = [  # 0.25 + 0.25 USD a minute in shop, 2 passes a minute of error_free, only fails of never_passes
        series(cost, cumulative((minutes, 0.25)), service="shop", agent="planner", model="gpt-4o", provider="openai"),
        series(cost, cumulative((minutes, 0.25)), service="shop", agent="writer", model="o4-mini", provider="openai"),
        series(cost, cumulative((minutes, 1.0)), service="idle", agent="a", model="gpt-4o", provider="openai"),
        series(results, cumulative((minutes, 2)), service="shop", evaluator="error_free", outcome="pass", agent=""),
        series(results, cumulative((minutes, 1)), service="shop", evaluator="never_passes", outcome="fail", agent=""),
        series(results, "0x90", service="shop", evaluator="never_passes", outcome="pass", agent=""),
    ]
    sample = {"labels": '{evaluator="error_free", service="shop"}', "value": 0.25}  # 0.5 USD ÷ 2 passes
    cases = [{"expr": expr, "eval_time": "80m", "exp_samples": [sample]}]
    document = {"rule_files": [], "tests": [{"interval": "1m", "input_series": inputs, "promql_expr_test": cases}]}
    (tmp_path / "panel_test.yml").write_text(yaml.safe_dump(document, sort_keys=False, width=10_000))
    result = promtool("test", "rules", "panel_test.yml", cwd=tmp_path)
    assert result.returncode == 0, f"promtool test rules:\n{result.stdout}\n{result.stderr}"
