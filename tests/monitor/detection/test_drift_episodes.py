"""Episodes: an active change keeps the `since` stored when it was first seen, a direction flip starts a new
episode, a change no longer active ends its episode, and an incomplete report ends none."""

from __future__ import annotations

from monitor.detection.detect import detect
from monitor.detection.episodes import episode_key, merge_episodes
from monitor.detection.model import DriftReport
from monitor.store.signal_rows import DriftEpisode

from .builders import config, key, ratio, sample

T0 = 1_764_770_400.0
ERRORS = key("error_rate")
LENGTH = key("response_length")


def report(at: float, *, errors_up: bool = True, length: float = 360.0) -> DriftReport:
    recent = {ERRORS: ratio(300, 15 if errors_up else 0), LENGTH: sample(100, length, 60)}
    baseline = {ERRORS: ratio(2100, 21), LENGTH: sample(600, 180, 60)}
    return detect(config(), at, recent, baseline, {})


def since(merged: DriftReport) -> dict[str, float | None]:
    return {s.signal: s.since for s in merged.signals}


def test_a_new_change_starts_an_episode() -> None:
    merged, started, ended = merge_episodes(report(T0), [])
    assert since(merged) == {"error_rate": T0, "response_length": T0}
    assert started == [
        DriftEpisode("shop", "planner", "error_rate", "", "up", T0),
        DriftEpisode("shop", "planner", "response_length", "", "up", T0),
    ]
    assert ended == []


def test_since_is_kept_across_merges() -> None:
    _, stored, _ = merge_episodes(report(T0), [])
    for later in (T0 + 60, T0 + 3600):
        merged, started, ended = merge_episodes(report(later), stored)
        assert since(merged) == {"error_rate": T0, "response_length": T0}
        assert started == [] and ended == []


def test_a_direction_flip_is_a_new_episode() -> None:
    _, stored, _ = merge_episodes(report(T0), [])
    merged, started, ended = merge_episodes(report(T0 + 60, length=90.0), stored)
    assert since(merged) == {"error_rate": T0, "response_length": T0 + 60}
    assert started == [DriftEpisode("shop", "planner", "response_length", "", "down", T0 + 60)]
    assert ended == [episode_key(started[0])]


def test_a_change_no_longer_active_ends() -> None:
    _, stored, _ = merge_episodes(report(T0), [])
    merged, started, ended = merge_episodes(report(T0 + 60, errors_up=False, length=180.0), stored)
    assert since(merged) == {"error_rate": None, "response_length": None}  # the errors improved: not active
    assert started == []
    assert ended == [("shop", "planner", "error_rate", ""), ("shop", "planner", "response_length", "")]


def test_an_episode_of_a_signal_gone_from_the_report_ends_unless_the_report_is_incomplete() -> None:
    gone = DriftEpisode("shop", "old-agent", "latency", "", "up", T0 - 600)
    _, _, ended = merge_episodes(report(T0), [gone])
    assert ended == [episode_key(gone)]
    _, _, ended = merge_episodes(report(T0).model_copy(update={"complete": False}), [gone])
    assert ended == []
