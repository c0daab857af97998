"""Acknowledged means kept (issue 39): the real daemon takes traces from the real OTel SDK exporter, is SIGKILLed
right after the last acknowledgement (or at random moments under load, several times), and restarted on the same
data directory: every acknowledged trace is evaluated and stored exactly once (its failing result row counted by
trace id), none twice. Without the intake log, the acknowledged traces not yet evaluated are lost."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.kill_loop import run_kill_loop

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_every_trace_acknowledged_before_a_sigkill_is_stored_exactly_once_after_the_restart(
    tmp_path: Path, protocol: str
) -> None:
    # A quiet period longer than the sending: at the kill, (nearly) every trace is acknowledged, none evaluated.
    slow = {"assembly": {"quiet_period": "4s"}}
    result = run_kill_loop(tmp_path, traces=300, kills=0, seed=0, final_kill=True, overrides=slow, protocol=protocol)
    assert result.kills == 1
    assert len(set(result.acked)) == 300
    assert not result.lost, f"{len(result.lost)} acknowledged traces lost"
    assert not result.doubled, f"{len(result.doubled)} traces stored twice"
    assert result.segments_left == 0  # each segment released once its traces were stored
    assert sum(result.rows.values()) == 300


def test_sigkills_at_random_moments_under_load_lose_and_double_no_acknowledged_trace(tmp_path: Path) -> None:
    result = run_kill_loop(tmp_path, traces=100_000, kills=3, seed=39)
    assert result.kills == 3
    assert len(set(result.acked)) == len(result.acked) > 0
    assert not result.lost, f"{len(result.lost)} acknowledged traces lost"
    assert not result.doubled, f"{len(result.doubled)} traces stored twice"
    assert result.segments_left == 0  # each segment released once its traces were stored
