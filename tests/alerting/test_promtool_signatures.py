"""`promtool test rules` on the generated AgentEvalNewFailureSignature: a new signature fires it (whether its
counter steps from 0 or its series first appears at 1), for `for` and then the window, after which it resolves;
no series, a counter that does not grow, a daemon restart (the counter back at 0) and a fresh Prometheus meeting
an old counter fire nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.alerting.helpers import alerts, check_rules, config, run_rule_tests, series, write_rules

pytestmark = pytest.mark.integration

ALERT = "AgentEvalNewFailureSignature"
NEW = "agent_eval_failure_signatures_new_total"
CONFIG: dict[str, Any] = {
    "signatures": {"window": "10m"},
    "alerting": {"group_interval": "1m", "health": {"enabled": False}, "default_alerts": {"min_pass_ratio": {}}},
}
UP = series("up", "1x60", job="agent-monitor", instance="a")  # Prometheus has scraped the daemon all along


def new_total(values: str, evaluator: str = "error_free", service: str = "shop", instance: str = "a") -> dict:
    return series(NEW, values, evaluator=evaluator, service=service, instance=instance)


def expected(value: str = "1", evaluator: str = "error_free", service: str = "shop", since: str = "10m") -> dict:
    return {
        "exp_labels": {"evaluator": evaluator, "service": service, "severity": "warning"},
        "exp_annotations": {
            "summary": f"New failure mode of {evaluator} on {service}",
            "description": f"{value} new failure signatures of evaluator {evaluator} on service {service} over the "
            f"last {since}: the agent fails in a way it did not before.",
            "failing_traces_url": f"http://localhost:9464/review?evaluator={evaluator}&service={service}&since={since}",
        },
    }


def check(tmp_path: Path, inputs: list[dict], expectations: dict[str, list[dict]], cfg: dict = CONFIG) -> None:
    """Run the rules over `inputs` (one value a minute) and expect `expectations` (eval time → firing alerts)."""
    cases = [{"alertname": ALERT, "eval_time": at, "exp_alerts": exp} for at, exp in expectations.items()]
    run_rule_tests(tmp_path, config(cfg), [{"interval": "1m", "input_series": inputs, "alert_rule_test": cases}])


def test_the_rule_text_and_promtool_check(tmp_path: Path) -> None:
    cfg = config({**CONFIG, "alerting": {**CONFIG["alerting"], "selector": 'namespace="agents"', "job": "am"}})
    [rule] = alerts(cfg, ALERT)
    new = f'{NEW}{{namespace="agents"}}'
    assert rule["expr"] == (
        "sum by (evaluator, service) (\n"
        f"  (\n    {new}\n    unless\n    last_over_time({new}[10m] offset 10m)\n  )\n"
        '  and on ()\n  count(up{job="am",namespace="agents"} offset 10m)\n'
        f"  or\n  increase({new}[10m])\n"
        ") > 0\n"
    )
    assert "for" not in rule and rule["labels"] == {"severity": "warning"}
    check_rules(write_rules(tmp_path, cfg))
    runbooks = (Path(__file__).resolve().parents[2] / "docs" / "runbooks.md").read_text()
    assert f'<a id="{ALERT}"></a>' in runbooks


def test_on_by_default_and_off_with_its_switch_or_all_default_alerts() -> None:
    [rule] = alerts(config({}), ALERT)  # the embedded defaults: signatures.window 1h
    assert "[1h]" in rule["expr"] and rule["annotations"]["failing_traces_url"].endswith("&since=1h")
    assert "{{ $labels.evaluator | urlquery }}" in rule["annotations"]["failing_traces_url"]
    off = {"new_failure_signatures": {"enabled": False}}
    assert not alerts(config(alerting={"default_alerts": off}), ALERT)
    assert not alerts(config(alerting={"default_alerts": {"enabled": False}}), ALERT)
    # the list form of evaluators gets no default pass-ratio alerts, but new signatures are over every evaluator
    assert alerts(config(evaluators=[{"name": "error_free"}]), ALERT)
    tuned = config(
        signatures={"window": "30m", "min_count": 3},
        alerting={"default_alerts": {"new_failure_signatures": {"for": "5m", "severity": "critical"}}},
    )
    [rule] = alerts(tuned, ALERT)
    assert rule["for"] == "5m" and rule["labels"]["severity"] == "critical" and "[35m]" in rule["expr"]
    assert "(each with 3 results within 30m of its first)" in rule["annotations"]["description"]


def test_a_counter_stepping_from_0_fires_at_once_and_resolves_after_the_window(tmp_path: Path) -> None:
    # error_free/shop: 0 until 20m, a new signature counted between 20m and 21m; refusal/shop and two replicas
    # of error_free/desk do not grow
    inputs = [
        UP,
        new_total("0x20 1x40"),
        new_total("2x60", evaluator="refusal"),
        new_total("0x60", service="desk"),
        new_total("4x60", service="desk", instance="b"),
    ]
    check(tmp_path, inputs, {"19m": [], "21m": [expected()], "29m": [expected()], "32m": [], "50m": []})


def test_a_series_that_first_appears_at_1_fires_too(tmp_path: Path) -> None:
    # the daemon creates the series with the first new signature: increase() alone would never see it;
    # replica b's older series of the same (evaluator, service) does not grow
    inputs = [UP, new_total("_x20 1x40"), new_total("3x60", instance="b")]
    check(tmp_path, inputs, {"19m": [], "20m": [expected()], "29m": [expected()], "31m": [], "50m": []})


def test_for_delays_it_and_the_range_outlasts_for(tmp_path: Path) -> None:
    cfg = {**CONFIG, "alerting": {**CONFIG["alerting"], "default_alerts": {"min_pass_ratio": {}}}}
    cfg["alerting"]["default_alerts"]["new_failure_signatures"] = {"for": "5m"}
    inputs = [UP, new_total("0x20 1x40")]
    firing = [expected(since="15m")]
    check(tmp_path, inputs, {"24m": [], "27m": firing, "34m": firing, "37m": []}, cfg)


def test_no_series_and_a_counter_that_does_not_grow_fire_nothing(tmp_path: Path) -> None:
    # 5m: Prometheus has no data a window ago, so an old counter it meets now (a fresh Prometheus, a new scrape
    # config) is not taken for new
    inputs = [UP, new_total("5x60"), series("agent_eval_results_total", "0+10x60", evaluator="refusal")]
    check(tmp_path, inputs, {"0m": [], "5m": [], "15m": [], "59m": []})


def test_a_restart_back_at_0_fires_nothing_and_one_counted_after_it_fires(tmp_path: Path) -> None:
    inputs = [
        UP,
        new_total("5x20 _x2 0x37"),  # restarted at ~21m, its counter back at 0
        new_total("3x20", service="desk"),  # replaced by a pod of another name, whose counter starts at 0
        new_total("_x23 0x37", service="desk", instance="b"),
        new_total("5x20 _x2 1x37", evaluator="refusal"),  # restarted, then counted a new signature
    ]
    firing = [expected(evaluator="refusal")]
    check(tmp_path, inputs, {"20m": [], "23m": firing, "26m": firing, "40m": []})
