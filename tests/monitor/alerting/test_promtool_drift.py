"""`promtool test rules` on the generated AgentQualityRegression and AgentBehaviourDrift: a quality signal active
for longer than `drift.alerts.for` fires the first with the signal's labels and annotations that say what moved,
from what to what (the baseline and recent means read by template queries), against which baseline and since when;
active for less than `for`, or a quality change for the better (the drift series nonzero, active 0), fires nothing;
a behaviour signal active fires the second; two replicas exporting the same series make one alert."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from monitor.alerting.drift_rules import BEHAVIOUR_ALERT, QUALITY_ALERT
from tests.support.alert_rules import alerts, check_rules, config, run_rule_tests, series, write_rules

pytestmark = pytest.mark.integration

CONFIG: dict[str, Any] = {
    "alerting": {"group_interval": "1m", "health": {"enabled": False}, "default_alerts": {"enabled": False}},
    "drift": {"alerts": {"for": "10m"}},
}
SINCE = 1_700_000_000  # 2023-11-14 22:13:20 UTC
SINCE_TEXT = "2023-11-14 22:13:20 +0000 UTC"
QUALITY = {"service": "shop", "agent": "planner", "signal": "pass_ratio", "subject": "helpfulness"}
BEHAVIOUR = {"service": "shop", "agent": "planner", "signal": "tool_calls", "subject": ""}


def signal(
    labels: dict[str, str],
    active: str,
    *,
    kind: str = "quality",
    baseline: float = 0.97,
    recent: float = 0.89,
    down: float = 0.08,
    since: str | None = None,
    instance: str = "a",
) -> list[dict[str, str]]:
    """The daemon's series of one signal (one value a minute for 45m): `active` the agent_quality_drift_active
    values."""
    own = {k: v for k, v in labels.items() if v} | {"instance": instance}  # an empty label is an absent one
    n = 45  # minutes of the other series
    return [
        series("agent_quality_baseline", f"{baseline}x{n}", **own, baseline="same_hours"),
        series("agent_quality_recent", f"{recent}x{n}", **own),
        series("agent_quality_drift", f"{down}x{n}", **own, kind=kind, direction="down"),
        series("agent_quality_drift", f"0x{n}", **own, kind=kind, direction="up"),
        series("agent_quality_drift_active", active, **own, kind=kind),
        series("agent_quality_drift_since_timestamp_seconds", since or f"{SINCE}x{n}", **own, kind=kind),
    ]


def expected(labels: dict[str, str], severity: str, moved: str, worse: bool = True) -> dict:
    subject = f" ({labels['subject']})" if labels["subject"] else ""
    what = f"{labels['signal']}{subject} of agent planner on service shop"
    verdict = "worse than" if worse else "changed from"
    return {
        "exp_labels": {**{k: v for k, v in labels.items() if v}, "severity": severity},
        "exp_annotations": {
            "summary": f"{what} {'regressed' if worse else 'drifted'} from its baseline",
            "description": f"{what} moved {moved} over the last 30m, {verdict} its own past, since {SINCE_TEXT}.",
            "changes_url": "http://localhost:9464/review/changes?service=shop&agent=planner",
            "explain_url": "http://localhost:9464/review/explain?service=shop&agent=planner&since=30m"
            "&reference_since=1d30m&reference_until=30m",
        },
    }


REGRESSED = expected(QUALITY, "warning", "down from 0.97 (baseline: same_hours) to 0.89")


def check(tmp_path: Path, inputs: list[dict], expectations: dict[tuple[str, str], list[dict]], cfg=CONFIG) -> None:
    """Run the rules over `inputs` and expect `expectations` ((alert, eval time) → firing alerts)."""
    cases = [{"alertname": a, "eval_time": at, "exp_alerts": exp} for (a, at), exp in expectations.items()]
    run_rule_tests(tmp_path, config(cfg), [{"interval": "1m", "input_series": inputs, "alert_rule_test": cases}])


def test_the_rule_text_and_promtool_check(tmp_path: Path) -> None:
    cfg = config({**CONFIG, "alerting": {**CONFIG["alerting"], "selector": 'namespace="agents"'}})
    [rule] = alerts(cfg, QUALITY_ALERT)
    assert rule["expr"] == (
        'max by (service, agent, signal, subject) (agent_quality_drift_active{kind="quality",namespace="agents"})'
        " == 1\n"
    )
    assert rule["for"] == "10m" and rule["labels"] == {"severity": "warning"}
    assert 'subject=%q,namespace=\\"agents\\"})" $labels.service' in rule["annotations"]["description"]
    check_rules(write_rules(tmp_path, cfg))
    runbooks = (Path(__file__).resolve().parents[3] / "docs" / "runbooks.md").read_text()
    assert f'<a id="{QUALITY_ALERT}"></a>' in runbooks and f'<a id="{BEHAVIOUR_ALERT}"></a>' in runbooks


def test_on_by_default_and_off_with_their_switches() -> None:
    [quality] = alerts(config({}), QUALITY_ALERT)  # the embedded defaults
    [behaviour] = alerts(config({}), BEHAVIOUR_ALERT)
    assert quality["for"] == behaviour["for"] == "10m"
    assert quality["labels"]["severity"] == "warning" and behaviour["labels"]["severity"] == "info"
    assert not alerts(config(drift={"enabled": False}), QUALITY_ALERT)
    assert not alerts(config(drift={"alerts": {"quality": False}}), QUALITY_ALERT)
    assert alerts(config(drift={"alerts": {"quality": False}}), BEHAVIOUR_ALERT)
    tuned = config(drift={"alerts": {"for": "30m", "severity": "critical", "behaviour_severity": "warning"}})
    assert alerts(tuned, QUALITY_ALERT)[0]["labels"]["severity"] == "critical"
    assert alerts(tuned, BEHAVIOUR_ALERT)[0]["for"] == "30m"


def test_a_regression_active_past_for_fires_with_what_moved_from_what_to_what(tmp_path: Path) -> None:
    inputs = signal(QUALITY, "0x5 1x40")  # active from 5m
    check(tmp_path, inputs, {(QUALITY_ALERT, "10m"): [], (QUALITY_ALERT, "16m"): [REGRESSED]})


def test_active_for_less_than_for_fires_nothing(tmp_path: Path) -> None:
    inputs = signal(QUALITY, "0x5 1x8 0x30")  # active from 5m to 13m
    check(tmp_path, inputs, {(QUALITY_ALERT, "12m"): [], (QUALITY_ALERT, "16m"): [], (QUALITY_ALERT, "30m"): []})


def test_a_change_for_the_better_fires_nothing(tmp_path: Path) -> None:
    better = {**QUALITY, "signal": "error_rate", "subject": ""}
    inputs = signal(better, "0x40", baseline=0.1, recent=0.02, since="0x40")  # the drift series nonzero, active 0
    check(tmp_path, inputs, {(QUALITY_ALERT, "30m"): [], (BEHAVIOUR_ALERT, "30m"): []})


def test_a_behaviour_change_fires_agent_behaviour_drift(tmp_path: Path) -> None:
    inputs = signal(BEHAVIOUR, "1x40", kind="behaviour", baseline=2.5, recent=4.25, down=0)
    inputs = [s for s in inputs if 'direction="' not in s["series"]]
    inputs += [
        series("agent_quality_drift", "0x40", **BEHAVIOUR, kind="behaviour", direction="down", instance="a"),
        series("agent_quality_drift", "0.7x40", **BEHAVIOUR, kind="behaviour", direction="up", instance="a"),
    ]
    inputs = [{**s, "series": s["series"].replace('subject="",', "")} for s in inputs]
    drifted = expected(BEHAVIOUR, "info", "up from 2.5 (baseline: same_hours) to 4.25", worse=False)
    check(tmp_path, inputs, {(BEHAVIOUR_ALERT, "15m"): [drifted], (QUALITY_ALERT, "15m"): []})


def test_two_replicas_make_one_alert(tmp_path: Path) -> None:
    inputs = signal(QUALITY, "1x40") + signal(QUALITY, "1x40", instance="b")
    check(tmp_path, inputs, {(QUALITY_ALERT, "15m"): [REGRESSED]})


def test_the_selector_reaches_the_annotations_queries(tmp_path: Path) -> None:
    # two namespaces export the same signal: the alert and its annotations read the selected one only
    cfg = {**CONFIG, "alerting": {**CONFIG["alerting"], "selector": 'namespace="agents"'}}
    inputs = [{**s, "series": s["series"].replace("{", '{namespace="agents",', 1)} for s in signal(QUALITY, "1x40")] + [
        {**s, "series": s["series"].replace("{", '{namespace="other",', 1)}
        for s in signal(QUALITY, "1x40", baseline=0.5, recent=0.4)
    ]
    check(tmp_path, inputs, {(QUALITY_ALERT, "15m"): [REGRESSED]}, cfg)
