"""The scenarios of issue 41 in compressed time, through the daemon's drift job on a real SQLite store: a
stationary agent with daily seasonality raises nothing, a new version that behaves the same raises nothing, and
each real change (error rate 1 % → 5 %, answers twice as long, a tool no longer called, a judge score −0.1, cost
+50 %) is found and alerts (active for `drift.alerts.for`) within the bounds a 30-minute recent window allows at
10 traces a minute. tests/bench/bench_drift.py prints the same scenarios' delays and a stationary week's alarms."""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor.config.drift import DriftConfig
from tests.support.drift_harness import run, store_with
from tests.support.drift_scenarios import SCENARIOS

HISTORY_DAYS = 3
CHANGES = [
    ("error_rate_1_to_5_percent", "quality"),
    ("response_length_doubled", "behaviour"),
    ("tool_no_longer_called", "behaviour"),
    ("judge_score_down_0_1", "quality"),
    ("cost_up_50_percent", "behaviour"),
]


@pytest.mark.parametrize(("name", "kind"), CHANGES)
def test_a_change_is_found_and_alerts_within_an_hour(tmp_path: Path, name: str, kind: str) -> None:
    scenario, config = SCENARIOS[name], DriftConfig()
    change_at = store_with(tmp_path / "results.db", scenario, history_days=HISTORY_DAYS, hours_after=1.5)
    result = run(
        tmp_path / "results.db",
        scenario,
        config,
        since=change_at - 3600,
        until=change_at + 1.5 * 3600,
        step=config.interval,
        change_at=change_at,
    )
    assert result.detection_delay is not None and result.detection_delay <= 1800, result.alerts
    assert result.alert_delay is not None and result.alert_delay <= 1800 + config.alerts.for_ + config.interval
    before = [key for key, at in result.alerts if at < change_at]
    assert not before  # nothing fired in the stationary hour before the change
    assert result.last is not None
    found = [s for s in result.last.changes() if (s.signal, s.subject) == (scenario.signal, scenario.subject)]
    assert found and found[0].kind.value == kind and found[0].baseline_kind.value == "same_hours"
    if kind == "quality":
        assert found[0].worse is True


@pytest.mark.parametrize("name", ["stationary", "new_version_same_behaviour"])
def test_no_change_raises_no_alert_over_a_day(tmp_path: Path, name: str) -> None:
    scenario, config = SCENARIOS[name], DriftConfig()
    change_at = store_with(tmp_path / "results.db", scenario, history_days=HISTORY_DAYS, hours_after=24)
    result = run(
        tmp_path / "results.db",
        scenario,
        config,
        since=change_at - 3600,
        until=change_at + 24 * 3600,
        step=config.interval * 3,
        change_at=change_at,
    )
    assert result.alerts == []
    assert result.last is not None and result.last.tested > 0  # it did test: the signals had their samples
    if name == "new_version_same_behaviour":
        assert all(s.recent_variants == ("1.5",) for s in result.last.signals if s.agent == "planner")


def test_the_same_hours_are_what_keeps_daily_seasonality_quiet(tmp_path: Path) -> None:
    """The stationary agent is 50 % slower at its afternoon peak: against the trailing 24 h (`seasonality: none`)
    that is latency drift every afternoon; against the same hours of the previous days it is nothing."""
    scenario = SCENARIOS["stationary"]
    change_at = store_with(tmp_path / "results.db", scenario, history_days=HISTORY_DAYS, hours_after=24)
    fired = {}
    for seasonality in ("none", "hour_of_day"):
        config = DriftConfig(seasonality=seasonality)
        result = run(
            tmp_path / "results.db",
            scenario,
            config,
            since=change_at,
            until=change_at + 24 * 3600,
            step=900,
            change_at=change_at,
        )
        fired[seasonality] = {key[2] for key, _ in result.alerts}
    assert "latency" in fired["none"]
    assert fired["hour_of_day"] == set()
