"""`promtool test rules` on the generated AgentEvalVariantWorse: it fires once the daemon's verdict has said
"worse" for 5m (on any replica), not on a short dip, and resolves when the verdict comes back to 0."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.alert_rules import alerts, check_rules, config, run_rule_tests, series, write_rules

pytestmark = pytest.mark.integration

ALERT = "AgentEvalVariantWorse"
CONFIG = {
    "variants": {
        "attribute": "service.version",
        "compare": [
            {"evaluator": "error_free", "baseline": "1.4", "candidate": "1.5", "window": "30m", "min_samples": 50},
            {"evaluator": "latency", "baseline": "1.4", "candidate": "1.5", "window": "30m", "min_samples": 50},
        ],
    },
    "alerting": {"group_interval": "1m", "selector": 'namespace="agents"', "health": {"enabled": False}},
}
PAIR = {"baseline": "1.4", "candidate": "1.5", "namespace": "agents"}


def verdicts(evaluator: str, values: str, pod: str) -> dict[str, str]:
    return series("agent_eval_variant_verdict", values, evaluator=evaluator, pod=pod, **PAIR)


def expected(evaluator: str) -> dict:
    return {
        "exp_labels": {"evaluator": evaluator, "baseline": "1.4", "candidate": "1.5", "severity": "warning"},
        "exp_annotations": {
            "summary": f"1.5 is worse than 1.4 on {evaluator}",
            "description": f"The {evaluator} results of variant 1.5 are significantly worse than those of 1.4 over "
            "the last 30m (at least 50 results a side); agent_eval_variant_delta and its _lower/_upper bounds give "
            "the size of the drop.",
            "failing_traces_url": f"http://localhost:9464/review?evaluator={evaluator}&since=30m&variant=1.5",
            "explain_url": f"http://localhost:9464/review/explain?evaluator={evaluator}&since=30m&variant=1.5",
        },
    }


def test_the_rule_text(tmp_path) -> None:
    cfg = config(CONFIG)
    [error_free, latency] = alerts(cfg, ALERT)
    assert error_free["expr"] == (
        "min by (evaluator, baseline, candidate) (agent_eval_variant_verdict"
        '{evaluator="error_free",baseline="1.4",candidate="1.5",namespace="agents"}) == -1\n'
    )
    assert error_free["for"] == "5m" and latency["labels"]["evaluator"] == "latency"
    check_rules(write_rules(tmp_path, cfg))
    assert not alerts(config({**CONFIG, "variants": {"attribute": "service.version"}}), ALERT)
    runbooks = (Path(__file__).resolve().parents[3] / "docs" / "runbooks.md").read_text()
    assert f'<a id="{ALERT}"></a>' in runbooks


def test_fires_after_five_minutes_of_worse_on_any_replica_and_resolves(tmp_path) -> None:
    # error_free: replica a says 0 throughout; replica b says -1 from 10m to 30m, then 0 again.
    # latency: a 3-minute dip to -1 at 10m on replica a only: shorter than `for`.
    tests = [
        {
            "interval": "1m",
            "input_series": [
                verdicts("error_free", "0x40", "a"),
                verdicts("error_free", "0x9 -1x20 0x10", "b"),
                verdicts("latency", "0x9 -1x2 0x28", "a"),
                verdicts("latency", "0x40", "b"),
            ],
            "alert_rule_test": [
                {"alertname": ALERT, "eval_time": "12m", "exp_alerts": []},
                {"alertname": ALERT, "eval_time": "20m", "exp_alerts": [expected("error_free")]},
                {"alertname": ALERT, "eval_time": "29m", "exp_alerts": [expected("error_free")]},
                {"alertname": ALERT, "eval_time": "35m", "exp_alerts": []},
            ],
        }
    ]
    run_rule_tests(tmp_path, config(CONFIG), tests)
