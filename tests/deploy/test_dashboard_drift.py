"""The dashboard's *Drift* row (issue 41): its panels, their queries on the drift series of the metric contract (the
most any replica reports, by signal), the *Active changes* table's columns and its link to the agent's Changes page,
and the queries run by `promtool` over the series two replicas export for a regression, a change for the better,
a behaviour change and a quiet signal: the table lists the active changes only (baseline → recent, change, since),
the effect panel signs each significant change, the baseline-vs-recent panels split ratios from magnitudes. The live
dashboard test (tests/deploy/test_dashboard.py) runs too briefly for a report with a signal: those series may be
absent there."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.deploy.test_dashboard import UNTIL_DRIFTED, analyze, contract, load_dashboard, panel, row_panels
from tests.support.alert_rules import promtool, series

ROW = "Drift"
DRIFT_PANELS = [
    "Active changes",
    "Drift effect per signal",
    "Drift report",
    "Baseline vs recent: ratios and scores",
    "Baseline vs recent: calls, sizes, cost, latency",
]
SIGNAL = ("service", "agent", "signal", "subject")
CHANGES_LINK = "${review_url}/review/changes?service=${__data.fields.service}&agent=${__data.fields.agent}"


def _targets(title: str) -> list[dict]:
    return panel(load_dashboard(), title)["targets"]


def test_the_row_has_its_panels_on_the_drift_series_of_the_contract():
    assert row_panels(ROW) == DRIFT_PANELS
    documented = contract()
    assert set(documented) >= UNTIL_DRIFTED
    for title in DRIFT_PANELS:
        for target in _targets(title):
            selectors, groupings = analyze(target["expr"])
            assert {s.metric for s in selectors} <= set(documented), title
            assert all(s.metric.startswith(("agent_quality_", "agent_monitor_drift_")) for s in selectors), title
            for s in selectors:
                if s.metric.startswith("agent_quality_"):
                    assert {("service", "=~", "$service"), ("agent", "=~", "$agent")} <= set(s.matchers), title
            for grouping in groupings:  # the replicas' one report: the most any reports, never a sum
                assert set(SIGNAL) <= set(grouping.labels), title
                assert f"max by ({', '.join(grouping.labels)})" in target["expr"], title


def test_the_active_changes_table_lists_signal_subject_baseline_recent_change_since_and_links_to_changes():
    p = panel(load_dashboard(), "Active changes")
    assert p["type"] == "table" and p["gridPos"]["w"] == 24
    assert all(t["instant"] and t["format"] == "table" for t in p["targets"])
    assert [t["id"] for t in p["transformations"]] == ["merge", "organize"]
    renamed = p["transformations"][1]["options"]["renameByName"]
    assert {renamed[f"Value #{ref}"] for ref in "BCDE"} == {"Baseline", "Recent", "Change", "Since"}
    active, *_, since = p["targets"]
    assert active["expr"].startswith("max by (service, agent, signal, subject, kind) (agent_quality_drift_active{")
    assert active["expr"].endswith("== 1")
    assert since["expr"].startswith("1000 * (")  # epoch seconds as Grafana's milliseconds
    assert [link["url"] for link in p["fieldConfig"]["defaults"]["links"]] == [CHANGES_LINK]


def test_baseline_dashed_against_recent_and_the_two_scales():
    for title, unit in (
        ("Baseline vs recent: ratios and scores", "percentunit"),
        ("Baseline vs recent: calls, sizes, cost, latency", "short"),
    ):
        p = panel(load_dashboard(), title)
        recent, baseline = p["targets"]
        assert "agent_quality_recent{" in recent["expr"] and "agent_quality_baseline{" in baseline["expr"]
        assert p["fieldConfig"]["defaults"]["unit"] == unit
        [dashed] = p["fieldConfig"]["overrides"]
        assert dashed["matcher"] == {"id": "byFrameRefID", "options": "B"}
    ratios = panel(load_dashboard(), "Baseline vs recent: ratios and scores")["targets"][0]["expr"]
    others = panel(load_dashboard(), "Baseline vs recent: calls, sizes, cost, latency")["targets"][0]["expr"]
    assert 'signal=~"pass_ratio|' in ratios and 'signal!~"pass_ratio|' in others


def _signal(labels: dict[str, str], kind: str, active: int, baseline: float, recent: float, up: float, down: float,
            since: float, instance: str) -> list[dict]:  # fmt: skip
    own = {"instance": instance, **{k: v for k, v in labels.items() if v}}
    return [
        series("agent_quality_baseline", f"{baseline}x30", **own, baseline="same_hours"),
        series("agent_quality_recent", f"{recent}x30", **own),
        series("agent_quality_drift", f"{up}x30", **own, kind=kind, direction="up"),
        series("agent_quality_drift", f"{down}x30", **own, kind=kind, direction="down"),
        series("agent_quality_drift_active", f"{active}x30", **own, kind=kind),
        series("agent_quality_drift_since_timestamp_seconds", f"{since}x30", **own, kind=kind),
    ]


REGRESSION = {"service": "shop", "agent": "planner", "signal": "pass_ratio", "subject": "helpfulness"}
BETTER = {"service": "shop", "agent": "planner", "signal": "error_rate", "subject": ""}
BEHAVIOUR = {"service": "shop", "agent": "planner", "signal": "tool_calls", "subject": ""}
QUIET = {"service": "desk", "agent": "", "signal": "latency", "subject": ""}


def _labels(labels: dict[str, str], **extra: str) -> str:
    every = {**{k: v for k, v in labels.items() if v}, **extra}
    return "{" + ",".join(f'{k}="{v}"' for k, v in sorted(every.items())) + "}"


def _substituted(expr: str) -> str:
    for variable, value in (("$service", ".*"), ("$agent", ".*"), ("$__range", "30m")):
        expr = expr.replace(variable, value)
    return expr


@pytest.mark.integration
def test_the_queries_evaluated_by_promtool(tmp_path: Path) -> None:
    inputs = []
    for instance in ("a", "b"):  # two replicas, the same report
        inputs += _signal(REGRESSION, "quality", 1, 0.97, 0.89, 0, 0.08, 1_700_000_000, instance)
        inputs += _signal(BETTER, "quality", 0, 0.1, 0.02, 0, 0.08, 0, instance)
        inputs += _signal(BEHAVIOUR, "behaviour", 1, 2.5, 4.25, 0.7, 0, 1_700_000_600, instance)
        inputs += _signal(QUIET, "behaviour", 0, 1.5, 1.5, 0, 0, 0, instance)
    inputs += [
        series("agent_monitor_drift_report_timestamp_seconds", "0+60x30", instance="a"),
        series("agent_monitor_drift_signals_tested", "4x30", instance="a"),
        series("agent_monitor_drift_report_failures_total", "0x10 1x20", instance="a"),
    ]
    a, b, c, d, e = (_substituted(t["expr"]) for t in _targets("Active changes"))
    [effect] = (_substituted(t["expr"]) for t in _targets("Drift effect per signal"))
    ratios = [_substituted(t["expr"]) for t in _targets("Baseline vs recent: ratios and scores")]
    others = [_substituted(t["expr"]) for t in _targets("Baseline vs recent: calls, sizes, cost, latency")]
    age, tested, failed = (_substituted(t["expr"]) for t in _targets("Drift report"))

    def case(expr: str, *samples: tuple[str, float]) -> dict:
        expected = [{"labels": labels, "value": value} for labels, value in samples]
        return {"expr": expr, "eval_time": "20m", "exp_samples": expected}

    cases = [
        case(a, (_labels(REGRESSION, kind="quality"), 1), (_labels(BEHAVIOUR, kind="behaviour"), 1)),
        case(b, (_labels(REGRESSION, baseline="same_hours"), 0.97), (_labels(BEHAVIOUR, baseline="same_hours"), 2.5)),
        case(c, (_labels(REGRESSION), 0.89), (_labels(BEHAVIOUR), 4.25)),
        case(d, (_labels(REGRESSION, direction="down"), 0.08), (_labels(BEHAVIOUR, direction="up"), 0.7)),
        case(e, (_labels(REGRESSION), 1_700_000_000_000), (_labels(BEHAVIOUR), 1_700_000_600_000)),
        case(effect, (_labels(REGRESSION), -0.08), (_labels(BETTER), -0.08), (_labels(BEHAVIOUR), 0.7)),
        case(ratios[0], (_labels(REGRESSION), 0.89), (_labels(BETTER), 0.02)),
        case(ratios[1], (_labels(REGRESSION), 0.97), (_labels(BETTER), 0.1)),
        case(others[0], (_labels(BEHAVIOUR), 4.25), (_labels(QUIET), 1.5)),
        case(others[1], (_labels(BEHAVIOUR), 2.5), (_labels(QUIET), 1.5)),
        case(age, ("{}", 0)),
        case(tested, ("{}", 4)),
        case(failed, ("{}", 1)),
    ]
    document = {"rule_files": [], "tests": [{"interval": "1m", "input_series": inputs, "promql_expr_test": cases}]}
    (tmp_path / "panel_test.yml").write_text(yaml.safe_dump(document, sort_keys=False, width=10_000))
    result = promtool("test", "rules", "panel_test.yml", cwd=tmp_path)
    assert result.returncode == 0, f"promtool test rules:\n{result.stdout}\n{result.stderr}"
