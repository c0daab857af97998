"""The dashboard's *Conversations* row (issue 27): its panels, units, queries and links, and the *Session pass ratio
per evaluator* query run by `promtool` over written series (session-level verdicts only; 0 for an evaluator that
only fails, no point without a verdict). That every metric it reads exists and that its key panels show data from
the real daemon is tests/deploy/test_dashboard.py's live test (its KEY_PANELS)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.deploy.test_dashboard import all_panels, analyze, contract, load_dashboard, panel, row_panels
from tests.support.alert_rules import cumulative, promtool, series

SESSION_PANELS = [
    "Session pass ratio per evaluator",
    "Failing sessions by evaluator",
    "Sessions completed by how they ended",
    "Open sessions",
    "Turns per session p50, p95",
    "Late and cut turns",
    "Sessions cut early by reason",
]
FILTERS = 'service=~"$service", evaluator=~"$evaluator", agent=~"$agent"'
RATE = "[$__rate_interval]"
SESSIONS_LINK = "${review_url}/review/sessions"


def _exprs(title: str) -> list[str]:
    return [t["expr"] for t in panel(load_dashboard(), title)["targets"]]


def test_the_conversations_row_has_its_panels_after_spend():
    assert row_panels("Conversations") == SESSION_PANELS
    rows = [p["title"] for p in all_panels(load_dashboard()) if p["type"] == "row"]
    assert rows.index("Conversations") == rows.index("Spend") + 1


def test_every_panel_of_the_row_reads_the_session_metrics_of_the_contract():
    """A panel that is missing, or a query on a metric the daemon does not export (docs/metrics.md), fails."""
    documented = contract()
    wanted = {
        "Session pass ratio per evaluator": {"agent_eval_results_total"},
        "Failing sessions by evaluator": {"agent_eval_results_total"},
        "Sessions completed by how they ended": {"agent_sessions_completed_total"},
        "Open sessions": {"agent_monitor_sessions_open"},
        "Turns per session p50, p95": {"agent_session_turns_bucket"},
        "Late and cut turns": {"agent_monitor_session_turns_late_total", "agent_monitor_session_turns_cut_total"},
        "Sessions cut early by reason": {"agent_monitor_sessions_cut_total"},
    }
    for title, metrics in wanted.items():
        read = {s.metric for expr in _exprs(title) for s in analyze(expr)[0]}
        assert read == metrics, title
        assert read <= set(documented), f"{title}: {read - set(documented)} not in docs/metrics.md"


def test_the_session_verdict_panels_count_session_level_results_only():
    for title in ("Session pass ratio per evaluator", "Failing sessions by evaluator"):
        for expr in _exprs(title):
            for s in analyze(expr)[0]:
                assert ("level", "=", "session") in s.matchers, f"{title}: {expr}"
    [fails] = panel(load_dashboard(), "Failing sessions by evaluator")["targets"]
    assert fails["exemplar"]  # the last turn's trace id: its review page names the conversation
    selector = f'agent_eval_results_total{{level="session", outcome="fail", {FILTERS}}}'
    assert fails["expr"] == f"sum by (evaluator) (rate({selector}{RATE}))"
    dashboard = load_dashboard()
    for title in ("Session pass ratio per evaluator", "Failing sessions by evaluator"):
        [link] = panel(dashboard, title)["fieldConfig"]["defaults"]["links"]
        assert link["url"].startswith(f"{SESSIONS_LINK}?evaluator=${{__field.labels.evaluator}}&failing=true")
    ratio = panel(dashboard, "Session pass ratio per evaluator")["fieldConfig"]["defaults"]
    assert (ratio["unit"], ratio["min"], ratio["max"]) == ("percentunit", 0, 1)


def test_sessions_by_ending_turn_percentiles_and_the_bounds():
    [ended] = _exprs("Sessions completed by how they ended")
    assert ended == f'sum by (ended) (rate(agent_sessions_completed_total{{service=~"$service"}}{RATE}))'
    [open_] = _exprs("Open sessions")
    assert open_ == "sum by (instance) (agent_monitor_sessions_open)"  # per replica: each holds its own
    assert "Per replica" in panel(load_dashboard(), "Open sessions")["description"]
    p50, p95 = _exprs("Turns per session p50, p95")
    buckets = f'sum by (le, service) (rate(agent_session_turns_bucket{{service=~"$service"}}{RATE}))'
    assert (p50, p95) == (f"histogram_quantile(0.5, {buckets})", f"histogram_quantile(0.95, {buckets})")
    late, cut = _exprs("Late and cut turns")
    assert late == f"sum(rate(agent_monitor_session_turns_late_total{RATE}))"
    assert cut == f"sum(rate(agent_monitor_session_turns_cut_total{RATE}))"
    [early] = _exprs("Sessions cut early by reason")
    assert early == f"sum by (reason) (rate(agent_monitor_sessions_cut_total{RATE}))"


@pytest.mark.integration
def test_the_session_pass_ratio_is_of_session_verdicts_and_zero_for_an_evaluator_that_only_fails(
    tmp_path: Path,
) -> None:
    """promtool evaluates the panel's query: the trace-level results of the same evaluator name are not counted,
    an evaluator whose sessions only fail reads 0, one with no session verdict (only skips) has no point."""
    [target] = panel(load_dashboard(), "Session pass ratio per evaluator")["targets"]
    expr = target["expr"]
    for variable, value in (("$service", ".*"), ("$evaluator", ".*"), ("$agent", ".*"), ("$__rate_interval", "5m")):
        expr = expr.replace(variable, value)
    results, minutes = "agent_eval_results_total", 30

    def counter(evaluator: str, outcome: str, level: str, per_minute: float) -> dict:
        return series(
            results, cumulative((minutes, per_minute)), service="shop", evaluator=evaluator, outcome=outcome,
            level=level, agent="",
        )  # fmt: skip

    inputs = [
        counter("user_rephrase", "pass", "session", 3),
        counter("user_rephrase", "fail", "session", 1),
        counter("user_rephrase", "fail", "trace", 5),  # not a session verdict
        counter("abandonment", "fail", "session", 1),
        counter("conversation_completion", "skip", "session", 2),
    ]
    samples = [
        {"labels": '{evaluator="user_rephrase"}', "value": 0.75},
        {"labels": '{evaluator="abandonment"}', "value": 0},
    ]
    cases = [{"expr": expr, "eval_time": "20m", "exp_samples": samples}]
    document = {"rule_files": [], "tests": [{"interval": "1m", "input_series": inputs, "promql_expr_test": cases}]}
    (tmp_path / "panel_test.yml").write_text(yaml.safe_dump(document, sort_keys=False, width=10_000))
    result = promtool("test", "rules", "panel_test.yml", cwd=tmp_path)
    assert result.returncode == 0, f"promtool test rules:\n{result.stdout}\n{result.stderr}"
