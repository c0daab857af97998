"""`promtool test rules` on the generated AgentEvalNewFailureSignature: a new signature fires it, whether its
(evaluator, service) is born with it on a Prometheus with no history (the daemon's recent gauge at 1 from the first
scrape; the counter's series appears at 1) or an old counter steps up, for `for` and then the window, after which it
resolves; replicas add up; after a daemon's restart (its recent count forgotten) the counter's growth Prometheus saw
keeps it firing. No series, steady series, a daemon restart (the counter back at 0) and a fresh Prometheus meeting an
old counter fire nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.alert_rules import alerts, check_rules, config, run_rule_tests, series, write_rules

pytestmark = pytest.mark.integration

ALERT = "AgentEvalNewFailureSignature"
NEW = "agent_eval_failure_signatures_new_total"
RECENT = "agent_eval_failure_signatures_new_recent"
CONFIG: dict[str, Any] = {
    "signatures": {"window": "10m"},
    "alerting": {"group_interval": "1m", "health": {"enabled": False}, "default_alerts": {"min_pass_ratio": {}}},
}


def new_total(values: str, evaluator: str = "error_free", service: str = "shop", instance: str = "a") -> dict:
    return series(NEW, values, evaluator=evaluator, service=service, instance=instance)


def recent(values: str, evaluator: str = "error_free", service: str = "shop", instance: str = "a") -> dict:
    """The daemon's gauge: the signatures it counted new over the alert's range (10m here), 0 after it."""
    return series(RECENT, values, evaluator=evaluator, service=service, instance=instance)


def expected(value: str = "1", evaluator: str = "error_free", service: str = "shop", since: str = "10m") -> dict:
    return {
        "exp_labels": {"evaluator": evaluator, "service": service, "severity": "warning"},
        "exp_annotations": {
            "summary": f"New failure mode of {evaluator} on {service}",
            "description": f"{value} new failure signatures of evaluator {evaluator} on service {service} over the "
            f"last {since}: the agent fails in a way it did not before.",
            "failing_traces_url": f"http://localhost:9464/review?evaluator={evaluator}&service={service}&since={since}",
            "explain_url": f"http://localhost:9464/review/explain?evaluator={evaluator}&service={service}&since={since}",
        },
    }


def check(tmp_path: Path, inputs: list[dict], expectations: dict[str, list[dict]], cfg: dict = CONFIG) -> None:
    """Run the rules over `inputs` (one value a minute, from Prometheus's start at 0m) and expect `expectations`
    (eval time → firing alerts)."""
    cases = [{"alertname": ALERT, "eval_time": at, "exp_alerts": exp} for at, exp in expectations.items()]
    run_rule_tests(tmp_path, config(cfg), [{"interval": "1m", "input_series": inputs, "alert_rule_test": cases}])


def test_the_rule_text_and_promtool_check(tmp_path: Path) -> None:
    cfg = config({**CONFIG, "alerting": {**CONFIG["alerting"], "selector": 'namespace="agents"', "job": "am"}})
    [rule] = alerts(cfg, ALERT)
    assert rule["expr"] == (
        f'sum by (evaluator, service) ({RECENT}{{namespace="agents"}}) > 0\n'
        "or\n"
        f'round(sum by (evaluator, service) (increase({NEW}{{namespace="agents"}}[10m]))) > 0\n'
    )
    assert "offset" not in rule["expr"]  # no arm waits for scrape history
    assert "for" not in rule and rule["labels"] == {"severity": "warning"}
    check_rules(write_rules(tmp_path, cfg))
    runbooks = (Path(__file__).resolve().parents[3] / "docs" / "runbooks.md").read_text()
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


def test_the_first_signatures_on_a_fresh_prometheus_fire_at_its_first_evaluation(tmp_path: Path) -> None:
    # Prometheus starts at 0m with no history; the daemon counted a first new signature of three evaluators just
    # before: their counters are born at 1, where increase() sees no growth, and the recent gauge reads 1
    evaluators = ("error_free", "tool_success_rate", "refusal")
    inputs = [s for e in evaluators for s in (new_total("1x40", evaluator=e), recent("1x10 0x30", evaluator=e))]
    firing = [expected(evaluator=e) for e in sorted(evaluators)]
    check(tmp_path, inputs, {"0m": firing, "1m": firing, "9m": firing, "11m": [], "30m": []})


def test_an_old_counter_that_steps_up_fires_at_once_and_resolves_after_the_window(tmp_path: Path) -> None:
    # error_free/shop: 0 until 20m, a new signature counted between 20m and 21m; refusal/shop and two replicas
    # of error_free/desk do not grow
    inputs = [
        new_total("0x20 1x40"),
        recent("0x20 1x10 0x30"),
        new_total("2x60", evaluator="refusal"),
        recent("0x60", evaluator="refusal"),
        new_total("0x60", service="desk"),
        new_total("4x60", service="desk", instance="b"),
    ]
    check(tmp_path, inputs, {"19m": [], "21m": [expected()], "29m": [expected()], "32m": [], "50m": []})


def test_replicas_add_up(tmp_path: Path) -> None:
    # replica a counted one new signature, replica b (the same PostgreSQL: other signatures) two, at once
    inputs = [
        new_total("_x20 1x40"),
        recent("_x20 1x10 0x30"),
        new_total("3x19 5x40", instance="b"),
        recent("0x19 2x10 0x30", instance="b"),
    ]
    check(tmp_path, inputs, {"19m": [], "20m": [expected("3")], "29m": [expected("3")], "31m": [], "50m": []})


def test_for_delays_it_and_the_range_outlasts_for(tmp_path: Path) -> None:
    cfg = {**CONFIG, "alerting": {**CONFIG["alerting"], "default_alerts": {"min_pass_ratio": {}}}}
    cfg["alerting"]["default_alerts"]["new_failure_signatures"] = {"for": "5m"}
    inputs = [new_total("_x20 1x40"), recent("_x20 1x15 0x25")]  # the daemon's range: the window + for
    firing = [expected(since="15m")]
    check(tmp_path, inputs, {"24m": [], "27m": firing, "34m": firing, "37m": []}, cfg)


def test_a_restart_keeps_it_firing_on_the_counter_growth_prometheus_saw(tmp_path: Path) -> None:
    # counted new at 20m; the daemon restarts at ~24m and has counted nothing since: neither series is in its
    # scrapes (stale), its recent count was a memory; increase() still counts the step Prometheus saw before, until
    # the range has passed
    inputs = [new_total("0x20 1x3 stale"), recent("0x20 1x3 stale")]
    check(tmp_path, inputs, {"21m": [expected()], "26m": [expected()], "29m": [expected()], "32m": []})


def test_no_series_steady_series_and_a_fresh_prometheus_fire_nothing(tmp_path: Path) -> None:
    # 0m: a fresh Prometheus (or a new scrape config) meets the old counter of a long-running daemon, whose
    # signatures were all counted new long ago (the recent gauge at 0): nothing is new
    inputs = [new_total("5x60"), recent("0x60"), series("agent_eval_results_total", "0+10x60", evaluator="refusal")]
    check(tmp_path, inputs, {"0m": [], "5m": [], "15m": [], "59m": []})


def test_a_restart_back_at_0_fires_nothing_and_one_counted_after_it_fires(tmp_path: Path) -> None:
    inputs = [
        new_total("5x20 stale _ 0x37"),  # restarted at ~21m, its counter back at 0, no recent count
        recent("0x20 stale"),
        new_total("3x20", service="desk"),  # replaced by a pod of another name, whose counter starts at 0
        new_total("_x23 0x37", service="desk", instance="b"),
        new_total("5x20 stale _ 1x37", evaluator="refusal"),  # restarted, then counted a new signature
        recent("0x20 stale _ 1x10 0x27", evaluator="refusal"),
    ]
    firing = [expected(evaluator="refusal")]
    check(tmp_path, inputs, {"20m": [], "23m": firing, "26m": firing, "34m": [], "40m": []})
