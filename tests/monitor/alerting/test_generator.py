"""The rule generator as pure functions: expressions, labels, burn-rate factors, selector, templates, output."""

from __future__ import annotations

import re
import urllib.parse
from pathlib import Path

import pytest
import yaml

from monitor.alerting.promql import complement, duration, number, string
from monitor.alerting.rules import prometheus_rule, render, rule_file, rule_groups
from monitor.alerting.slo_rules import BURN_WINDOWS
from tests.support.alert_rules import FULL, alerts, config, rules

RESULTS = "agent_eval_results_total"


def test_promql_text_helpers() -> None:
    assert [duration(s) for s in (1, 90, 300, 5400, 86400, 30 * 86400, 0.25, 36 * 3600)] == [
        "1s",
        "1m30s",
        "5m",
        "1h30m",
        "1d",
        "30d",
        "250ms",
        "1d12h",
    ]
    assert complement(0.995) == "0.005" and complement(0.99) == "0.01" and complement(0.9) == "0.1"
    assert number(0.02 * 7 * 24) == "3.36" and number(14.4) == "14.4" and number(1.0) == "1"
    assert string('a"b\\c') == '"a\\"b\\\\c"'


def test_pass_ratio_alert() -> None:
    cfg = config(FULL)
    [rule] = alerts(cfg, "AgentEvalPassRatioLow")  # refusal is disabled: no rule for it
    assert rule["for"] == "5m"
    assert rule["labels"] == {"evaluator": "error_free", "severity": "warning", "team": "ml"}
    expr = rule["expr"]
    fails = f'{RESULTS}{{evaluator="error_free",outcome="fail",namespace="agents"}}[10m]'
    verdicts = f'{RESULTS}{{evaluator="error_free",outcome=~"pass|fail",namespace="agents"}}[10m]'
    assert f"sum by (evaluator, service) (increase({fails}))" in expr
    assert f"sum by (evaluator, service) (increase({verdicts})) >= 20" in expr
    assert ") < 0.9\nand\n" in expr
    notes = rule["annotations"]
    assert set(notes) == {"summary", "description", "runbook_url", "failing_traces_url", "explain_url", "top_factor"}
    assert "{{ $value | humanizePercentage }}" in notes["description"]
    assert "{{ $labels.service }}" in notes["description"] and "10m" in notes["description"]
    # {alert} and {evaluator} filled in, Go templates passed through untouched
    assert notes["runbook_url"] == (
        "https://runbooks.example/AgentEvalPassRatioLow.md?evaluator=error_free&s={{ $labels.service }}"
    )
    assert notes["failing_traces_url"] == "https://monitor.example/api/failing?evaluator=error_free"


def test_no_runbook_annotation_without_a_template_and_no_alert_without_a_block() -> None:
    cfg = config(evaluators=[{"name": "latency", "alert": {"min_pass_ratio": 0.5}}, {"name": "error_free"}])
    [rule] = alerts(cfg, "AgentEvalPassRatioLow")
    assert "runbook_url" not in rule["annotations"]
    assert rule["annotations"]["failing_traces_url"] == (  # its service, over its own window
        "http://localhost:9464/review?evaluator=latency&service={{ $labels.service | urlquery }}&since=5m"
    )
    assert rule["for"] == "5m" and rule["labels"] == {"evaluator": "latency", "severity": "warning"}
    assert f'{RESULTS}{{evaluator="latency",outcome="fail"}}[5m]' in rule["expr"]
    for rule in rules(cfg):
        assert "runbook_url" not in rule.get("annotations", {})


def test_selector_applies_to_every_raw_series() -> None:
    cfg = config(FULL)
    found = [m for rule in rules(cfg) for m in re.findall(r"([\w:]*)\{([^{}]*)\}", rule["expr"])]
    raw = [matchers for name, matchers in found if ":" not in name]  # recorded series carry no scrape labels
    assert len(raw) > 20
    assert all('namespace="agents"' in s for s in raw), [s for s in raw if "namespace" not in s]


def test_slo_recording_rules_for_30d() -> None:
    cfg = config(FULL)
    [group] = [g for g in rule_groups(cfg) if g["name"] == "agent-monitor.slo.latency"]
    assert group["interval"] == "30s"
    records = {r["record"]: r for r in group["rules"] if "record" in r}
    windows = ["5m", "30m", "1h", "2h", "6h", "1d", "3d", "30d"]
    assert list(records) == [
        *(f"agent_eval:error_ratio:rate{w}" for w in windows),
        "agent_eval:slo_objective",
        "agent_eval:slo_error_budget_remaining",
    ]
    ratio = records["agent_eval:error_ratio:rate1h"]["expr"]
    fails = f'{RESULTS}{{evaluator="latency",outcome="fail",namespace="agents"}}[1h]'
    assert f"(\n  sum by (evaluator, service) (rate({fails}))\n  or\n  0 * sum by" in ratio
    assert ratio.count(f'{RESULTS}{{evaluator="latency",outcome=~"pass|fail",namespace="agents"}}[1h]') == 2
    assert ratio.rstrip().endswith('outcome=~"pass|fail",namespace="agents"}[1h]))')
    assert records["agent_eval:slo_objective"]["expr"] == "vector(0.99)"
    assert records["agent_eval:slo_objective"]["labels"] == {"evaluator": "latency"}
    assert records["agent_eval:slo_error_budget_remaining"]["expr"] == (
        '1 - agent_eval:error_ratio:rate30d{evaluator="latency"} / 0.01'
    )


def _burns(cfg, evaluator: str) -> list[dict]:
    return [r for r in alerts(cfg, "AgentEvalErrorBudgetBurn") if r["labels"]["evaluator"] == evaluator]


def test_burn_rate_alerts_for_30d_are_the_workbook_s() -> None:
    burns = _burns(config(FULL), "latency")
    assert [(r["labels"]["long_window"], r["labels"]["short_window"], r["labels"]["severity"]) for r in burns] == [
        ("1h", "5m", "critical"),
        ("6h", "30m", "critical"),
        ("1d", "2h", "warning"),
        ("3d", "6h", "warning"),
    ]
    for rule, factor in zip(burns, ("14.4", "6", "3", "1")):
        long, short = rule["labels"]["long_window"], rule["labels"]["short_window"]
        assert rule["expr"] == (
            f'agent_eval:error_ratio:rate{long}{{evaluator="latency"}} > {factor} * 0.01\n'
            f'and\nagent_eval:error_ratio:rate{short}{{evaluator="latency"}} > {factor} * 0.01\n'
        )
        assert "for" not in rule
        assert rule["labels"]["team"] == "ml"
        assert rule["annotations"]["failing_traces_url"].endswith("evaluator=latency")
        assert "{{ $value | humanizePercentage }}" in rule["annotations"]["description"]
    assert [w.factor(30 * 86400) for w in BURN_WINDOWS] == pytest.approx([14.4, 6, 3, 1])


def test_burn_rate_factors_scale_with_the_period() -> None:
    cfg = config(FULL)
    burns = _burns(cfg, "loop_detection")
    thresholds = [rule["expr"].split(" > ")[1].split("\n")[0] for rule in burns]
    # the same budget share (2%, 5%, 10%, 10%) spent within each long window of a 7-day period
    assert thresholds == ["3.36 * 0.1", "1.4 * 0.1", "0.7 * 0.1", "0.2333333333 * 0.1"]
    assert {rule["labels"]["severity"] for rule in burns} == {"info"}
    [group] = [g for g in rule_groups(cfg) if g["name"] == "agent-monitor.slo.loop_detection"]
    assert "agent_eval:error_ratio:rate7d" in [r.get("record") for r in group["rules"]]


def test_a_period_equal_to_a_burn_window_is_recorded_once() -> None:
    cfg = config(evaluators=[{"name": "latency", "slo": {"objective": 0.9, "period": "3d"}}])
    [group] = [g for g in rule_groups(cfg) if g["name"].startswith("agent-monitor.slo")]
    records = [r["record"] for r in group["rules"] if "record" in r]
    assert len(records) == len(set(records)) and records.count("agent_eval:error_ratio:rate3d") == 1


def test_health_alerts() -> None:
    cfg = config(FULL)
    [group] = [g for g in rule_groups(cfg) if g["name"] == "agent-monitor.health"]
    by_name = {rule["alert"]: rule for rule in group["rules"]}
    assert list(by_name) == [
        "AgentMonitorDown",
        "AgentMonitorEvaluationBacklog",
        "AgentMonitorJudgeCapacity",
        "AgentMonitorJudgeUnavailable",
        "AgentMonitorPollFailing",
        "AgentMonitorReceiversRefusing",
        "AgentMonitorReviewUnavailable",
        "AgentMonitorTracesDropped",
    ]
    for rule in by_name.values():
        assert rule["for"] == "5m" and rule["labels"] == {"severity": "critical", "team": "ml"}
        assert rule["annotations"]["runbook_url"].startswith(f"https://runbooks.example/{rule['alert']}.md")
        assert "failing_traces_url" not in rule["annotations"]
    assert by_name["AgentMonitorDown"]["expr"] == (
        'up{job="agent-monitor",namespace="agents"} == 0\nor\nabsent(up{job="agent-monitor",namespace="agents"})\n'
    )
    assert by_name["AgentMonitorEvaluationBacklog"]["expr"].strip().endswith("> 200")
    assert by_name["AgentMonitorReceiversRefusing"]["expr"].strip().endswith("> 0.05")
    review = by_name["AgentMonitorReviewUnavailable"]["expr"]
    assert review == 'agent_monitor_review_available{namespace="agents"} == 0\n'
    assert "[15m]" in by_name["AgentMonitorTracesDropped"]["expr"]  # 10m + for: one drop outlasts `for`
    poll = by_name["AgentMonitorPollFailing"]["expr"]
    assert 'status="error"' in poll and "unless" in poll and 'status="ok"' in poll
    judges = by_name["AgentMonitorJudgeUnavailable"]["expr"]
    assert 'reason=~"judge_unavailable|budget_exhausted"' in judges and 'status!~"ok|cached"' in judges
    off = config(FULL, alerting={**FULL["alerting"], "health": {"enabled": False}})
    assert [g["name"] for g in rule_groups(off)] == [
        "agent-monitor.quality",
        "agent-monitor.slo.latency",
        "agent-monitor.slo.loop_detection",
        "agent-monitor.spend",
        "agent-monitor.drift",
    ]


def test_nothing_to_alert_on_leaves_the_spend_recording_rules_alone() -> None:
    cfg = config(  # drift off too: its alerts are on by default, over every agent
        evaluators=[{"name": "latency"}],
        alerting={"default_alerts": {"enabled": False}, "health": {"enabled": False}},
        drift={"enabled": False},
    )
    [group] = rule_file(cfg)["groups"]
    assert group["name"] == "agent-monitor.spend" and all("record" in rule for rule in group["rules"])
    assert yaml.safe_load(render(cfg)) == rule_file(cfg)


def test_prometheus_operator_resource_wraps_the_same_groups() -> None:
    cfg = config(FULL)
    resource = prometheus_rule(cfg, "monitoring")
    assert resource["apiVersion"] == "monitoring.coreos.com/v1" and resource["kind"] == "PrometheusRule"
    assert resource["metadata"] == {
        "name": "agent-monitor",
        "namespace": "monitoring",
        "labels": {"app.kubernetes.io/component": "alerting-rules", "app.kubernetes.io/name": "agent-monitor"},
    }
    assert resource["spec"] == rule_file(cfg)
    assert "namespace" not in prometheus_rule(cfg)["metadata"]
    text = render(cfg, "prometheus-operator", "monitoring", source="monitor.yaml")
    assert text.startswith(
        "# Generated by `agent-monitor rules --config monitor.yaml --format prometheus-operator --namespace monitoring`"
    )
    assert yaml.safe_load(text) == resource


def test_output_is_deterministic_yaml_with_block_expressions() -> None:
    text = render(config(FULL), source="monitor.yaml")
    assert text == render(config(FULL), source="monitor.yaml")
    assert yaml.safe_load(text) == rule_file(config(FULL))
    body = re.sub(r"&\w+=", "", text.split("\n", 3)[3])  # the links' query strings
    assert "    expr: |\n" in text and "&" not in body  # no YAML anchors
    assert [g["name"] for g in rule_groups(config(FULL))] == [
        "agent-monitor.quality",
        "agent-monitor.slo.latency",
        "agent-monitor.slo.loop_detection",
        "agent-monitor.health",
        "agent-monitor.spend",
        "agent-monitor.drift",
    ]


def test_label_text_cannot_inject_templates_or_promql() -> None:
    label = 'odd{{"x"}}'
    cfg = config(
        FULL,
        evaluators=[{"name": "latency", "id": label, "alert": {"min_pass_ratio": 0.5}}],
    )
    [rule] = alerts(cfg, "AgentEvalPassRatioLow")
    assert 'evaluator="odd{{\\"x\\"}}"' in rule["expr"]
    assert rule["labels"]["evaluator"] == 'odd{{ "{{" }}"x"}}'  # alert label values are Go templates
    quoted = urllib.parse.quote(label, safe=":")
    assert rule["annotations"]["failing_traces_url"].endswith(f"evaluator={quoted}") and "%7B%7B" in quoted
    assert rule["annotations"]["runbook_url"].endswith(f"evaluator={quoted}&s={{{{ $labels.service }}}}")


def test_every_alert_has_a_runbook_section() -> None:
    """deploy/monitor.yaml links each alert to docs/runbooks.md#<alert>: every name needs its anchor there."""
    runbooks = (Path(__file__).resolve().parents[3] / "docs" / "runbooks.md").read_text()
    names = {rule["alert"] for rule in rules(config(FULL)) if "alert" in rule}
    assert len(names) == 13
    for name in names:
        assert f'<a id="{name}"></a>' in runbooks, name


def test_external_evaluators_alerts_and_slos_are_written_like_a_configured_evaluators() -> None:
    cfg = config(
        evaluators=[],
        external_evaluations={
            "alerts": {"answer_relevance": {"min_pass_ratio": 0.8, "window": "15m", "for": "10m"}},
            "slos": {"user_thumbs": {"objective": 0.95}},
        },
    )
    [rule] = [r for r in alerts(cfg, "AgentEvalPassRatioLow") if r["labels"]["evaluator"] == "answer_relevance"]
    assert rule["for"] == "10m" and ") < 0.8\nand\n" in rule["expr"]
    assert 'evaluator="answer_relevance",outcome="fail"' in rule["expr"]
    assert len(_burns(cfg, "user_thumbs")) == len(BURN_WINDOWS)
