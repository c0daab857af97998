"""`promtool test rules` on the generated SLO rules: each of the four burn-rate alerts fires on a burn it is
meant for, a slower burn never fires a faster alert, a burst that has stopped fires no page (the short window),
the factors scale with the period, and the recording rules hold the error ratio, objective and budget left."""

from __future__ import annotations

import pytest

from tests.support.alert_rules import alerts_sample, config, cumulative, run_rule_tests, series

pytestmark = pytest.mark.integration

ALERT = "AgentEvalErrorBudgetBurn"
RESULTS = "agent_eval_results_total"
CONFIG = {
    "evaluators": [
        {"name": "latency", "slo": {"objective": 0.99}},  # 30d: 1% budget; 14.4, 6, 3, 1
        {"name": "loop_detection", "slo": {"objective": 0.9, "period": "7d", "severity": "info"}},
    ],
    "alerting": {"group_interval": "1m", "health": {"enabled": False}},
}
MINUTES = 60
PAIRS = [("1h", "5m"), ("6h", "30m"), ("1d", "2h"), ("3d", "6h")]


def _steady(evaluator: str, service: str, failing_per_mille: int) -> list[dict[str, str]]:
    """1000 results a minute, `failing_per_mille` of them failing (no fail series at all when 0)."""
    common = {"evaluator": evaluator, "service": service}
    found = [series(RESULTS, cumulative((MINUTES, 1000 - failing_per_mille)), outcome="pass", **common)]
    if failing_per_mille:
        found.append(series(RESULTS, cumulative((MINUTES, failing_per_mille)), outcome="fail", **common))
    return found


LATENCY = {"burn20": 200, "burn8": 80, "burn4": 40, "burn2": 20, "calm": 5, "perfect": 0}
WEEKLY = {"w40": 400, "w20": 200, "w10": 100, "w5": 50, "w1": 10}
SPIKE = [  # half failing for the first 25 minutes, then all passing
    series(RESULTS, cumulative((25, 500), (35, 1000)), outcome="pass", evaluator="latency", service="spike"),
    series(RESULTS, cumulative((25, 500), (35, 0)), outcome="fail", evaluator="latency", service="spike"),
]
INPUT = [
    *(s for service, rate in LATENCY.items() for s in _steady("latency", service, rate)),
    *(s for service, rate in WEEKLY.items() for s in _steady("loop_detection", service, rate)),
    *SPIKE,
]
# Firing at 60m, per (long, short) window pair. Budget 1% (30d): thresholds 14.4%, 6%, 3%, 1%. The spike's
# 1h and 6h ratios are ~21%, but its 5m and 30m windows are clean: no page; its 2h and 6h short windows
# still hold it: tickets. Budget 10% over 7d: thresholds 33.6%, 14%, 7%, 2.33%.
FIRING = {
    ("latency", "1h"): ["burn20"],
    ("latency", "6h"): ["burn20", "burn8"],
    ("latency", "1d"): ["burn20", "burn8", "burn4", "spike"],
    ("latency", "3d"): ["burn20", "burn8", "burn4", "burn2", "spike"],
    ("loop_detection", "1h"): ["w40"],
    ("loop_detection", "6h"): ["w40", "w20"],
    ("loop_detection", "1d"): ["w40", "w20", "w10"],
    ("loop_detection", "3d"): ["w40", "w20", "w10", "w5"],
}


def _firing(evaluator: str, long: str) -> list[dict]:
    short = dict(PAIRS)[long]
    severity = "info" if evaluator == "loop_detection" else ("critical" if long in ("1h", "6h") else "warning")
    return [
        alerts_sample(
            ALERT,
            evaluator=evaluator,
            service=service,
            severity=severity,
            long_window=long,
            short_window=short,
        )
        for service in FIRING[(evaluator, long)]
    ]


def _value(selector: str, value: float, evaluator: str = "latency") -> dict:
    """The recorded series of `selector` at 60m, rounded to 1e-6."""
    service = selector.split('service="')[1].split('"')[0]
    labels = f'{{evaluator="{evaluator}",service="{service}"}}'
    return {
        "expr": f"round({selector}, 0.000001)",
        "eval_time": f"{MINUTES}m",
        "exp_samples": [{"labels": labels, "value": value}],
    }


def test_each_burn_rate_alert_fires_on_its_burn_only(tmp_path) -> None:
    alert_tests = [
        {
            "expr": f'ALERTS{{alertname="{ALERT}",evaluator="{evaluator}",long_window="{long}"}}',
            "eval_time": f"{MINUTES}m",
            "exp_samples": _firing(evaluator, long),
        }
        for evaluator in ("latency", "loop_detection")
        for long, _ in PAIRS
    ]
    recorded = [  # rounded: promtool compares floats exactly
        _value('agent_eval:error_ratio:rate5m{service="burn8"}', 0.08),
        _value('agent_eval:error_ratio:rate3d{service="perfect"}', 0),  # never failed: 0, not absent
        _value('agent_eval:slo_error_budget_remaining{service="calm"}', 0.5),  # 0.5% failing of a 1% budget
        _value('agent_eval:slo_error_budget_remaining{service="burn2"}', -1),  # twice the budget: overspent
        _value('agent_eval:error_ratio:rate7d{service="w5"}', 0.05, "loop_detection"),
        {
            "expr": "agent_eval:slo_objective",
            "eval_time": "1m",
            "exp_samples": [
                {"labels": 'agent_eval:slo_objective{evaluator="latency"}', "value": 0.99},
                {"labels": 'agent_eval:slo_objective{evaluator="loop_detection"}', "value": 0.9},
            ],
        },
    ]
    tests = [
        {"interval": "1m", "input_series": INPUT, "promql_expr_test": alert_tests + recorded},
        {  # the alerts as Alertmanager gets them, annotations rendered: burn20 fires all four within minutes
            "interval": "1m",
            "input_series": _steady("latency", "burn20", 200),
            "alert_rule_test": [
                {
                    "alertname": ALERT,
                    "eval_time": "10m",
                    "exp_alerts": [
                        {"exp_labels": labels, "exp_annotations": _annotations(labels)} for labels in _burn20_alerts()
                    ],
                }
            ],
        },
    ]
    run_rule_tests(tmp_path, config(CONFIG), tests)


def _burn20_alerts() -> list[dict[str, str]]:
    return [
        {
            "evaluator": "latency",
            "service": "burn20",
            "severity": "critical" if long in ("1h", "6h") else "warning",
            "long_window": long,
            "short_window": short,
        }
        for long, short in PAIRS
    ]


def _annotations(labels: dict[str, str]) -> dict[str, str]:
    long, short = labels["long_window"], labels["short_window"]
    factor = {"1h": "14.4", "6h": "6", "1d": "3", "3d": "1"}[long]
    share = {"1h": "2", "6h": "5", "1d": "10", "3d": "10"}[long]
    kind = "page" if long in ("1h", "6h") else "ticket"
    return {
        "summary": f"latency is burning its error budget over {factor}x the sustainable rate ({long}/{short} "
        f"windows, {kind})",
        "description": f"20% of the latency results of service burn20 failed over the last {long} (and over the "
        f"last {short}): more than {factor} times the 1% error budget of its 99% objective over 30d. At this "
        f"rate {share}% of the budget is spent within {long}.",
        "failing_traces_url": f"http://localhost:9464/review?evaluator=latency&service=burn20&since={long}",
        "explain_url": f"http://localhost:9464/review/explain?evaluator=latency&service=burn20&since={long}",
    }
