"""`promtool test rules` on the daemon-health alerts: each fires on its condition (after `for`), and not on
the look-alikes next to it (a small refused share, a shallow queue, other skip reasons, good judge answers,
another job's target down)."""

from __future__ import annotations

import pytest

from tests.support.alert_rules import alerts_sample, config, cumulative, run_rule_tests, series

pytestmark = pytest.mark.integration

CONFIG = {
    "evaluators": [],
    "alerting": {
        "group_interval": "1m",
        "labels": {"team": "ml"},
        "runbook_url_template": "https://runbooks.example/{alert}",
        "health": {"for": "5m", "severity": "critical", "refused_ratio": 0.05, "queue_depth": 200},
    },
}
MINUTES = 40
STEADY = {"instance": "a", "job": "agent-monitor"}


def _flat(value: float) -> str:
    return cumulative((MINUTES, 0), start=value)


INPUT = [
    # 10 of 110 spans refused on grpc (9% > 5%), 1 of 101 on http (1%)
    series("agent_monitor_spans_received_total", cumulative((MINUTES, 100)), receiver="grpc", **STEADY),
    series(
        "agent_monitor_spans_refused_total", cumulative((MINUTES, 10)), receiver="grpc", reason="throttled", **STEADY
    ),
    series("agent_monitor_spans_received_total", cumulative((MINUTES, 100)), receiver="http", **STEADY),
    series(
        "agent_monitor_spans_refused_total", cumulative((MINUTES, 1)), receiver="http", reason="malformed", **STEADY
    ),
    # one trace dropped at 11m
    series("agent_monitor_traces_dropped_total", cumulative((11, 0), (1, 1), (MINUTES - 12, 0)), reason="worker_crash"),
    series("agent_monitor_queue_depth", _flat(500), instance="a"),
    series("agent_monitor_queue_depth", _flat(10), instance="b"),
    # judges: unavailable skips and HTTP 503 answers; timeouts of a rule evaluator and good answers are fine
    series(
        "agent_eval_skips_total",
        cumulative((MINUTES, 3)),
        evaluator="hallucination",
        service="s",
        reason="judge_unavailable",
    ),
    series("agent_eval_skips_total", cumulative((MINUTES, 3)), evaluator="latency", service="s", reason="timeout"),
    series(
        "agent_monitor_judge_requests_total", cumulative((MINUTES, 2)), judge="safety", model="m", status="http_503"
    ),
    series("agent_monitor_judge_requests_total", cumulative((MINUTES, 9)), judge="safety", model="m", status="ok"),
    series("agent_monitor_judge_requests_total", cumulative((MINUTES, 9)), judge="safety", model="m", status="cached"),
    # the result store of instance a fails from 2m on; b's store is fine
    series("agent_monitor_review_available", cumulative((2, 0), (1, -1), (MINUTES - 3, 0), start=1), instance="a"),
    series("agent_monitor_review_available", _flat(1), instance="b"),
    # polling: every run of phoenix fails; jaeger fails now and then but also succeeds
    series("agent_monitor_poll_runs_total", cumulative((MINUTES, 1)), source="phoenix", status="error", **STEADY),
    series("agent_monitor_poll_runs_total", _flat(0), source="phoenix", status="ok", **STEADY),
    series("agent_monitor_poll_runs_total", cumulative((MINUTES, 1)), source="jaeger", status="error", **STEADY),
    series("agent_monitor_poll_runs_total", cumulative((MINUTES, 1)), source="jaeger", status="ok", **STEADY),
    # the daemon's target goes down at 10m; another job's target is down all along
    series("up", cumulative((10, 0), (1, -1), (MINUTES - 11, 0), start=1), instance="a", job="agent-monitor"),
    series("up", _flat(1), instance="b", job="agent-monitor"),
    series("up", _flat(0), instance="c", job="other"),
]
COMMON = {"severity": "critical", "team": "ml"}
FIRING_AT_20M = [
    alerts_sample("AgentMonitorReceiversRefusing", receiver="grpc", **COMMON),
    alerts_sample("AgentMonitorTracesDropped", reason="worker_crash", **COMMON),
    alerts_sample("AgentMonitorEvaluationBacklog", instance="a", **COMMON),
    alerts_sample(
        "AgentMonitorJudgeUnavailable", evaluator="hallucination", service="s", reason="judge_unavailable", **COMMON
    ),
    alerts_sample("AgentMonitorJudgeUnavailable", judge="safety", model="m", status="http_503", **COMMON),
    alerts_sample("AgentMonitorReviewUnavailable", instance="a", **COMMON),
    alerts_sample("AgentMonitorPollFailing", source="phoenix", **COMMON),
    alerts_sample("AgentMonitorDown", instance="a", job="agent-monitor", **COMMON),
]


def _alerts(eval_time: str, state: str = "firing") -> dict:
    return {"expr": f'ALERTS{{alertstate="{state}"}}', "eval_time": eval_time}


def test_each_health_alert_fires_on_its_condition(tmp_path) -> None:
    tests = [
        {
            "interval": "1m",
            "input_series": INPUT,
            "promql_expr_test": [
                # before `for` has passed, only pending (the drop and the outage are newer still)
                {**_alerts("4m"), "exp_samples": []},
                {**_alerts("20m"), "exp_samples": FIRING_AT_20M},
                # 35m: the single drop has left the 15m (10m + for) range: resolved; the rest still firing
                {**_alerts("35m"), "exp_samples": [s for s in FIRING_AT_20M if "TracesDropped" not in s["labels"]]},
                {
                    **_alerts("14m", "pending"),
                    "exp_samples": [
                        alerts_sample("AgentMonitorTracesDropped", "pending", reason="worker_crash", **COMMON),
                        alerts_sample("AgentMonitorDown", "pending", instance="a", job="agent-monitor", **COMMON),
                    ],
                },
            ],
            "alert_rule_test": [
                {
                    "alertname": "AgentMonitorReceiversRefusing",
                    "eval_time": "20m",
                    "exp_alerts": [
                        {
                            "exp_labels": {"receiver": "grpc", **COMMON},
                            "exp_annotations": {
                                "summary": "agent-monitor refuses spans on its grpc receiver",
                                "description": "9.091% of the spans sent to the grpc receiver were refused over "
                                "the last 10m (limit 5%): throttled, too large, malformed or over a cap; see "
                                "agent_monitor_spans_refused_total by reason.",
                                "runbook_url": "https://runbooks.example/AgentMonitorReceiversRefusing",
                            },
                        }
                    ],
                }
            ],
        },
        {  # no target scraped at all, and a receiver that refuses everything (no received series)
            "interval": "1m",
            "input_series": [
                series(
                    "agent_monitor_spans_refused_total", cumulative((MINUTES, 5)), receiver="http", reason="throttled"
                ),
            ],
            "promql_expr_test": [
                {
                    **_alerts("10m"),
                    "exp_samples": [
                        alerts_sample("AgentMonitorDown", job="agent-monitor", **COMMON),
                        alerts_sample("AgentMonitorReceiversRefusing", receiver="http", **COMMON),
                    ],
                }
            ],
        },
    ]
    run_rule_tests(tmp_path, config(CONFIG), tests)
