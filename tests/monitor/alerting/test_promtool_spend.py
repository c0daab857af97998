"""The `agent-monitor.spend` group under `promtool test rules`: spend over the last hour by service, agent and model
and by service, cost per passing trace of each trace-level evaluator (the service's spend ÷ its passing traces,
computed here from the series written), no sample without a pass; `AgentSpendOverBudget` fires above
`alerting.spend.max_usd_per_hour` after `for`, not below, and is not written while the budget is null;
`check-config` rejects a budget that is negative or not a number, with its line."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from monitor.alerting.spend_rules import COST_PER_PASS, SPEND, SPEND_BY_MODEL
from monitor.commands import check_config
from monitor.config import load_config
from tests.support.alert_rules import alerts, check_rules, config, rules, run_rule_tests, series, write_rules

pytestmark = pytest.mark.integration

ALERT = "AgentSpendOverBudget"
COST = "agent_llm_cost_usd_total"
RESULTS = "agent_eval_results_total"
QUIET = {"health": {"enabled": False}, "default_alerts": {"enabled": False}}
ROOT = Path(__file__).resolve().parents[3]

# USD per minute of each (service, agent, model, instance): shop has two agents, and its planner runs on two
# replicas (a and b) whose spend adds up; desk spends a lot; idle spends and never passes. Binary fractions, so the
# sums are exact (promtool compares floats exactly).
SPEND_PER_MINUTE = {
    ("shop", "planner", "gpt-4o", "a"): 0.03125,
    ("shop", "planner", "gpt-4o", "b"): 0.015625,
    ("shop", "writer", "claude-sonnet-4", "a"): 0.0625,
    ("desk", "triage", "gpt-4o-mini", "a"): 0.5,
    ("idle", "bot", "gpt-4o", "a"): 0.125,
}
# Results per minute of (service, evaluator, level, outcome, instance). Only trace-level passes count: the agent-level
# passes of error_free and the failures must not.
RESULTS_PER_MINUTE = {
    ("shop", "error_free", "trace", "pass", "a"): 3,
    ("shop", "error_free", "trace", "pass", "b"): 1,
    ("shop", "error_free", "trace", "fail", "a"): 2,
    ("shop", "error_free", "agent", "pass", "a"): 10,
    ("shop", "latency", "trace", "pass", "a"): 5,
    ("desk", "error_free", "trace", "pass", "a"): 2,
    ("desk", "latency", "trace", "fail", "a"): 4,  # desk's latency never passes: no cost per pass
    ("idle", "error_free", "trace", "pass", "a"): 0,  # a pass series that never grows: no sample, not +Inf
    ("idle", "error_free", "trace", "fail", "a"): 1,
}
MINUTES = 120
EVAL = "90m"  # the hour before is fully covered by samples: increase() over it is exact


def counter(per_minute: float, minutes: int = MINUTES) -> str:
    return f"0+{per_minute:g}x{minutes}"


def inputs() -> list[dict[str, str]]:
    found = [
        series(COST, counter(usd), service=s, agent=a, model=m, provider="openai", instance=i)
        for (s, a, m, i), usd in SPEND_PER_MINUTE.items()
    ]
    found += [
        series(RESULTS, counter(n), service=s, evaluator=e, level=lv, outcome=o, agent="", variant="", instance=i)
        for (s, e, lv, o, i), n in RESULTS_PER_MINUTE.items()
    ]
    return found


def hourly_spend(*key: str) -> float:
    """USD of the last hour of the series whose leading labels are `key` (service[, agent, model])."""
    return sum(usd * 60 for labels, usd in SPEND_PER_MINUTE.items() if labels[: len(key)] == key)


def hourly_passes(service: str, evaluator: str) -> int:
    return sum(
        n * 60
        for (s, e, level, outcome, _), n in RESULTS_PER_MINUTE.items()
        if (s, e, level, outcome) == (service, evaluator, "trace", "pass")
    )


def sample(record: str, labels: dict[str, str], value: float) -> dict[str, Any]:
    inner = ",".join(f'{key}="{val}"' for key, val in sorted(labels.items()))
    return {"labels": f"{record}{{{inner}}}", "value": value}


def spend_config(**spend: Any) -> dict[str, Any]:
    return {"evaluators": [], "alerting": {**QUIET, "group_interval": "1m", "spend": spend}}


def test_the_rule_text_and_promtool_check_with_spend_on_and_off(tmp_path: Path) -> None:
    alerting = {
        **QUIET,
        "selector": 'namespace="agents"',
        "labels": {"team": "ml"},
        "runbook_url_template": "https://runbooks.example/{alert}",
        "spend": {"max_usd_per_hour": 12.5},
    }
    on = config(evaluators=[], alerting=alerting)
    by_record = {rule["record"]: rule["expr"] for rule in rules(on) if "record" in rule}
    cost = f'{COST}{{namespace="agents"}}'
    assert by_record == {
        SPEND_BY_MODEL: f"sum by (service, agent, model) (increase({cost}[1h]))\n",
        SPEND: f"sum by (service) (increase({cost}[1h]))\n",
        COST_PER_PASS: f"{SPEND}\n/ on (service) group_right ()\n(\n"
        f'  sum by (service, evaluator) (increase({RESULTS}{{level="trace",outcome="pass",namespace="agents"}}[1h]))\n'
        "  > 0\n)\n",
    }
    [alert] = alerts(on, ALERT)
    assert alert["expr"] == f"{SPEND} > 12.5\n" and alert["for"] == "15m"
    assert alert["labels"] == {"severity": "warning", "team": "ml"}
    assert alert["annotations"]["runbook_url"] == f"https://runbooks.example/{ALERT}"
    check_rules(write_rules(tmp_path, on, "on.yml"))
    off = config(spend_config(max_usd_per_hour=None))
    assert not alerts(off, ALERT) and {r["record"] for r in rules(off) if "record" in r} == set(by_record)
    check_rules(write_rules(tmp_path, off, "off.yml"))
    assert not alerts(load_config(None, env={}), ALERT)  # the embedded default: off
    budget = {"AGENT_MONITOR_ALERTING__SPEND__MAX_USD_PER_HOUR": "20"}
    assert [a["expr"] for a in alerts(load_config(None, env=budget), ALERT)] == [f"{SPEND} > 20\n"]
    runbooks = (ROOT / "docs" / "runbooks.md").read_text(encoding="utf-8")
    assert f'<a id="{ALERT}"></a>' in runbooks


def test_recorded_spend_and_cost_per_pass_are_exact_and_absent_without_a_pass(tmp_path: Path) -> None:
    by_model = [
        sample(SPEND_BY_MODEL, {"service": s, "agent": a, "model": m}, hourly_spend(s, a, m))
        for s, a, m in sorted({key[:3] for key in SPEND_PER_MINUTE})
    ]
    by_service = [sample(SPEND, {"service": s}, hourly_spend(s)) for s in sorted({key[0] for key in SPEND_PER_MINUTE})]
    per_pass = [
        sample(COST_PER_PASS, {"service": s, "evaluator": e}, hourly_spend(s) / hourly_passes(s, e))
        for s, e in [("shop", "error_free"), ("shop", "latency"), ("desk", "error_free")]
    ]
    assert hourly_passes("desk", "latency") == 0 and hourly_passes("idle", "error_free") == 0
    tests = [
        {
            "interval": "1m",
            "input_series": inputs(),
            "promql_expr_test": [
                {"expr": SPEND_BY_MODEL, "eval_time": EVAL, "exp_samples": by_model},
                {"expr": SPEND, "eval_time": EVAL, "exp_samples": by_service},
                {"expr": COST_PER_PASS, "eval_time": EVAL, "exp_samples": per_pass},
                # no pass in the hour (desk's latency, idle's error_free): no sample, not +Inf
                {"expr": f'{COST_PER_PASS}{{service="idle"}}', "eval_time": EVAL, "exp_samples": []},
                {
                    "expr": f'{COST_PER_PASS}{{evaluator="latency",service="desk"}}',
                    "eval_time": EVAL,
                    "exp_samples": [],
                },
            ],
        }
    ]
    run_rule_tests(tmp_path, config(spend_config()), tests)


def expected(service: str, usd: float, budget: str = "15", for_: str = "15m") -> dict[str, Any]:
    return {
        "exp_labels": {"service": service, "severity": "critical"},
        "exp_annotations": {
            "summary": f"{service} spent {usd:.2f} USD on LLM calls in the last hour, over its budget of {budget} USD",
            "description": f"The LLM calls of service {service} cost {usd:.4f} USD over the last 1h, more than "
            f"alerting.spend.max_usd_per_hour ({budget} USD) for {for_}. {SPEND_BY_MODEL} (agent_llm_cost_usd_total "
            "by agent and model) says which agent and model spend it.",
        },
    }


def test_the_alert_fires_above_the_budget_after_for_and_not_below(tmp_path: Path) -> None:
    # desk: 0.5 USD a minute (30 USD/h) from 0m to 60m, then nothing; shop: 0.1 USD a minute (6 USD/h) all along;
    # edge: two agents at 0.125 USD a minute, exactly the 15 USD/h budget, which is not over it.
    inputs = [
        series(COST, "0+0.5x60 30x60", service="desk", agent="triage", model="m", provider="p", instance="a"),
        series(COST, counter(0.1), service="shop", agent="planner", model="m", provider="p", instance="a"),
        series(COST, counter(0.125), service="edge", agent="a", model="m", provider="p", instance="a"),
        series(COST, counter(0.125), service="edge", agent="b", model="m", provider="p", instance="a"),
    ]
    cfg = config(spend_config(max_usd_per_hour=15, severity="critical"))
    # desk's last hour holds 15 USD at 30m and more after: pending from 31m, firing from 46m (`for` 15m); from 60m
    # its hour holds less each minute: 20 USD at 80m, 15 USD (not over) at 90m.
    cases = {"30m": [], "45m": [], "46m": [expected("desk", 23.0)], "80m": [expected("desk", 20.0)], "90m": []}
    pending = f'ALERTS{{alertname="{ALERT}",alertstate="pending",service="desk",severity="critical"}}'
    tests = [
        {
            "interval": "1m",
            "input_series": inputs,
            "alert_rule_test": [{"alertname": ALERT, "eval_time": at, "exp_alerts": exp} for at, exp in cases.items()],
            "promql_expr_test": [
                {"expr": f'ALERTS{{alertname="{ALERT}"}}', "eval_time": "31m", "exp_samples": [
                    {"labels": pending, "value": 1}
                ]},
                {"expr": f'ALERTS{{alertname="{ALERT}"}}', "eval_time": "30m", "exp_samples": []},
            ],
        }
    ]  # fmt: skip
    run_rule_tests(tmp_path, cfg, tests)


@pytest.mark.parametrize(
    ("value", "message"),
    [("-1", "greater than or equal to 0"), ('"10"', "valid number"), ("true", "valid number"), (".inf", "finite")],
)
def test_check_config_rejects_a_budget_that_is_negative_or_not_a_number(tmp_path: Path, capsys, value, message) -> None:
    path = tmp_path / "monitor.yaml"
    path.write_text(f"alerting:\n  spend:\n    for: 5m\n    max_usd_per_hour: {value}\n", encoding="utf-8")
    assert check_config.run(argparse.Namespace(path=str(path), no_env=True)) == 2
    err = capsys.readouterr().err
    assert f"{path}:4: alerting.spend.max_usd_per_hour: " in err and message in err, err
    path.write_text("alerting:\n  spend: {max_usd_per_hour: 0.75, for: 30m}\n", encoding="utf-8")
    assert check_config.run(argparse.Namespace(path=str(path), no_env=True)) == 0
