"""The default set alerts out of the box (`alerting.default_alerts`), and every evaluator alert links to the failing
traces of its own service over its own window."""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor.config import AlertConfig, ConfigError, load_config
from monitor.config.alerting import DEFAULT_MIN_PASS_RATIOS
from tests.support.alert_rules import alerts, config, rules

ALERT = "AgentEvalPassRatioLow"
SERVICE = "{{ $labels.service | urlquery }}"


def _alerts_by_label(cfg) -> dict[str, AlertConfig | None]:
    return {r.entry.label: r.entry.alert for r in cfg.evaluator_entries()}


def test_the_embedded_default_alerts_on_the_evaluators_a_healthy_agent_always_passes() -> None:
    cfg = load_config(None, env={})
    by_label = _alerts_by_label(cfg)
    alerting = {label for label, alert in by_label.items() if alert is not None}
    assert alerting == set(DEFAULT_MIN_PASS_RATIOS) and alerting < set(by_label)
    # left out: budgets with guessed limits, and rates that depend on the agent's domain
    assert not alerting & {"latency", "token_budget", "cost_budget", "response_length", "pii_leak", "refusal"}
    assert by_label["error_free"] == AlertConfig(
        min_pass_ratio=0.8, window=1800, for_=300, min_samples=50, severity="warning"
    )
    rules = alerts(cfg, ALERT)
    assert sorted(rule["labels"]["evaluator"] for rule in rules) == sorted(DEFAULT_MIN_PASS_RATIOS)
    [error_free] = [rule for rule in rules if rule["labels"]["evaluator"] == "error_free"]
    assert error_free["for"] == "5m" and error_free["labels"]["severity"] == "warning"
    assert ") < 0.8\nand\n" in error_free["expr"] and "[30m])) >= 50\n" in error_free["expr"]
    assert error_free["annotations"]["failing_traces_url"] == (
        f"http://localhost:9464/review?evaluator=error_free&service={SERVICE}&since=30m"
    )


def test_own_alert_wins_and_they_can_be_narrowed_or_turned_off() -> None:
    own = {"min_pass_ratio": 0.99, "window": "5m", "severity": "critical"}
    cfg = config(evaluators={"override": {"error_free": {"alert": own}}, "remove": ["loop_detection"]})
    by_label = _alerts_by_label(cfg)
    assert by_label["error_free"] == AlertConfig(min_pass_ratio=0.99, window=300, severity="critical")
    assert by_label["tool_success_rate"] is not None and "loop_detection" not in by_label

    narrowed = config(alerting={"default_alerts": {"min_pass_ratio": {"finish_reason": 0.5}, "for": "1m"}})
    assert {label: a.min_pass_ratio for label, a in _alerts_by_label(narrowed).items() if a} == {"finish_reason": 0.5}
    off = config(alerting={"default_alerts": {"enabled": False}})
    assert not any(_alerts_by_label(off).values()) and not alerts(off, ALERT)
    # the list form is written out in full: what it does not say, it does not get
    listed = config(evaluators=[{"name": "error_free"}, {"name": "latency", "alert": {"min_pass_ratio": 0.5}}])
    assert [rule["labels"]["evaluator"] for rule in alerts(listed, ALERT)] == ["latency"]


def test_environment_overrides_reach_the_default_alerts() -> None:
    cfg = load_config(None, env={"AGENT_MONITOR_ALERTING__DEFAULT_ALERTS__FOR": "3s"})
    assert {a.for_ for a in _alerts_by_label(cfg).values() if a} == {3.0}


def test_a_default_alert_for_no_default_evaluator_is_a_located_error(tmp_path: Path) -> None:
    path = tmp_path / "monitor.yaml"
    path.write_text("alerting:\n  default_alerts:\n    min_pass_ratio:\n      eror_free: 0.9\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path, env={})
    assert f"{path}:4: alerting.default_alerts.min_pass_ratio.eror_free: " in str(caught.value)
    assert "did you mean 'error_free'?" in str(caught.value)


def test_each_alert_links_its_own_window_and_service() -> None:
    cfg = config(
        evaluators=[{"name": "error_free", "slo": {"objective": 0.99}}],
        variants={
            "attribute": "service.version",
            "compare": [{"evaluator": "error_free", "baseline": "1.4", "candidate": "1.5", "window": "2h"}],
        },
    )
    [canary] = alerts(cfg, "AgentEvalVariantWorse")
    # compared over every service (no `service` label): no service parameter, the comparison's window
    assert canary["annotations"]["failing_traces_url"] == (
        "http://localhost:9464/review?evaluator=error_free&since=2h&variant=1.5"
    )
    burns = {
        r["labels"]["long_window"]: r["annotations"]["failing_traces_url"]
        for r in alerts(cfg, "AgentEvalErrorBudgetBurn")
    }
    assert burns["6h"] == f"http://localhost:9464/review?evaluator=error_free&service={SERVICE}&since=6h"
    custom = config(
        evaluators=[{"name": "error_free", "alert": {"min_pass_ratio": 0.5, "window": "15m"}}],
        alerting={"traces_url_template": "https://ui.example/t?service={service}&e={evaluator}&from=now-{window}"},
    )
    [rule] = alerts(custom, ALERT)
    assert (
        rule["annotations"]["failing_traces_url"] == f"https://ui.example/t?service={SERVICE}&e=error_free&from=now-15m"
    )


DRIFT_ALERTS = ("AgentQualityRegression", "AgentBehaviourDrift")


def test_every_quality_alert_links_the_signatures_of_its_evaluator_over_its_own_window() -> None:
    """Pass ratio, SLO burn, canary and new signatures: each evaluator alert's link is the Failures page of its
    evaluator (and service) over the range its expression reads; only the health alerts have none."""
    cfg = config(
        evaluators=[
            {"name": "error_free", "alert": {"min_pass_ratio": 0.5, "window": "20m"}, "slo": {"objective": 0.99}}
        ],
        signatures={"window": "2h"},
        variants={
            "attribute": "service.version",
            "compare": [{"evaluator": "error_free", "baseline": "1.4", "candidate": "1.5", "window": "45m"}],
        },
    )
    page = "http://localhost:9464/review?evaluator="
    expected = {  # (alert, long_window) -> link
        ("AgentEvalPassRatioLow", None): f"{page}error_free&service={SERVICE}&since=20m",
        ("AgentEvalVariantWorse", None): f"{page}error_free&since=45m&variant=1.5",
        ("AgentEvalNewFailureSignature", None): f"{page}{{{{ $labels.evaluator | urlquery }}}}&service={SERVICE}"
        "&since=2h",
        **{
            ("AgentEvalErrorBudgetBurn", w): f"{page}error_free&service={SERVICE}&since={w}"
            for w in ("1h", "6h", "1d", "3d")
        },
    }
    found = {}
    for rule in rules(cfg):
        if "alert" not in rule:
            continue
        link = rule["annotations"].get("failing_traces_url")
        if rule["alert"].startswith("AgentMonitor") or rule["alert"] in DRIFT_ALERTS:  # drift: changes_url
            assert link is None, rule["alert"]
            continue
        found[(rule["alert"], rule["labels"].get("long_window"))] = link
        range_read = link.split("since=")[1].split("&")[0]
        if rule["alert"] != "AgentEvalVariantWorse":  # the daemon computes the verdict over the window
            assert f"[{range_read}]" in rule["expr"] or "rate" + range_read in rule["expr"], rule["alert"]
    assert found == expected
