"""`promtool test rules` on the generated AgentEvalPassRatioLow: it fires when the pass ratio stays low for
`for`, not before, never under `min_samples`, and resolves on recovery or when the traffic stops."""

from __future__ import annotations

import pytest

from tests.support.alert_rules import alerts_sample, config, cumulative, run_rule_tests, series

pytestmark = pytest.mark.integration

ALERT = "AgentEvalPassRatioLow"
CONFIG = {
    "evaluators": [
        {
            "name": "error_free",
            "alert": {"min_pass_ratio": 0.9, "window": "10m", "for": "5m", "min_samples": 20, "severity": "critical"},
        }
    ],
    "alerting": {
        "group_interval": "1m",
        "labels": {"team": "ml"},
        "runbook_url_template": "https://runbooks.example/{alert}?evaluator={evaluator}",
        "health": {"enabled": False},
    },
}
RESULTS = "agent_eval_results_total"


def _results(service: str, passes: str | None, fails: str) -> list[dict[str, str]]:
    common = {"evaluator": "error_free", "service": service, "level": "trace"}
    found = [series(RESULTS, fails, outcome="fail", **common)]
    if passes is not None:  # an evaluator that has never passed has no outcome="pass" series
        found.append(series(RESULTS, passes, outcome="pass", **common))
    return found


# Per minute, as counters (one value per minute from 0m to 100m):
#   degrading: 10 passing results/min until 20m, then half failing until 60m, then all passing again;
#   broken: never passes, 10 failing results/min until 40m, then no traffic at all;
#   trickle: always failing, but only 1 result/min: 10 in a 10m window, under min_samples 20.
INPUT = [
    *_results("degrading", cumulative((20, 10), (40, 5), (40, 10)), cumulative((20, 0), (40, 5), (40, 0))),
    *_results("broken", None, cumulative((40, 10), (60, 0))),
    *_results("trickle", cumulative((100, 0)), cumulative((100, 1))),
]


def _expected(service: str, ratio: str) -> dict:
    return {
        "exp_labels": {"evaluator": "error_free", "service": service, "severity": "critical", "team": "ml"},
        "exp_annotations": {
            "summary": f"error_free pass ratio is below 90% on {service}",
            "description": f"{ratio} of the error_free results of service {service} passed over the last 10m "
            "(at least 20 results), below the minimum of 90% for 5m.",
            "runbook_url": "https://runbooks.example/AgentEvalPassRatioLow?evaluator=error_free",
            "failing_traces_url": f"http://localhost:9464/review?evaluator=error_free&service={service}&since=10m",
            "explain_url": f"http://localhost:9464/review/explain?evaluator=error_free&service={service}&since=10m",
            "top_factor": "",
        },
    }


def test_pass_ratio_alert_fires_honours_for_and_min_samples_and_resolves(tmp_path) -> None:
    cfg = config(CONFIG)
    tests = [
        {
            "interval": "1m",
            "input_series": INPUT,
            "alert_rule_test": [
                # 26m: degrading has been below 90% since ~23m (pending, `for` is 5m); broken fires; trickle's
                # ratio is 0 but its window holds ~10 results < min_samples.
                {"alertname": ALERT, "eval_time": "26m", "exp_alerts": [_expected("broken", "0%")]},
                {
                    "alertname": ALERT,
                    "eval_time": "35m",
                    "exp_alerts": [_expected("degrading", "50%"), _expected("broken", "0%")],
                },
                # 55m: broken has had no traffic for 15m: under min_samples, the rule resolves
                {"alertname": ALERT, "eval_time": "55m", "exp_alerts": [_expected("degrading", "50%")]},
                # 75m: degrading recovered at 60m
                {"alertname": ALERT, "eval_time": "75m", "exp_alerts": []},
                {"alertname": ALERT, "eval_time": "100m", "exp_alerts": []},
            ],
            "promql_expr_test": [
                {
                    "expr": f'ALERTS{{alertname="{ALERT}"}}',
                    "eval_time": "26m",
                    "exp_samples": [
                        alerts_sample(ALERT, "firing", **_labels("broken")),
                        alerts_sample(ALERT, "pending", **_labels("degrading")),
                    ],
                },
                {  # the pass ratio under the threshold without the min_samples guard: 0 for trickle
                    "expr": f'1 - sum by (service) (increase({RESULTS}{{service="trickle",outcome="fail"}}[10m]))'
                    f' / sum by (service) (increase({RESULTS}{{service="trickle"}}[10m]))',
                    "eval_time": "35m",
                    "exp_samples": [{"labels": '{service="trickle"}', "value": 0}],
                },
            ],
        }
    ]
    run_rule_tests(tmp_path, cfg, tests)


def _labels(service: str) -> dict[str, str]:
    return {"evaluator": "error_free", "service": service, "severity": "critical", "team": "ml"}


def test_the_alert_names_its_top_factor_from_the_attribution_gauge(tmp_path) -> None:
    """With agent_eval_attribution exported for the alert's (evaluator, service), its `top_factor` annotation names
    the highest lift (over the replicas' max); another service's factors and a lower one are not it."""
    gauge = "agent_eval_attribution"
    factors = [
        series(gauge, "14x60", evaluator="error_free", service="broken", dimension="model", value="gemini-2.5-pro"),
        series(gauge, "3x60", evaluator="error_free", service="broken", dimension="tool", value="search"),
        series(gauge, "50x60", evaluator="error_free", service="degrading", dimension="tenant.id", value="acme"),
    ]
    expected = _expected("broken", "0%")
    expected["exp_annotations"]["top_factor"] = "model=gemini-2.5-pro (14× the passes)"
    tests = [
        {
            "interval": "1m",
            "input_series": [*INPUT, *factors],
            "alert_rule_test": [{"alertname": ALERT, "eval_time": "26m", "exp_alerts": [expected]}],
        }
    ]
    run_rule_tests(tmp_path, config(CONFIG), tests)
