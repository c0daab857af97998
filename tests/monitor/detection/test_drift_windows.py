"""A report's time and ranges: aligned to the interval behind the settle time, the same hours of each previous
period within the baseline, and the trailing window just before the recent one."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.detection.model import BaselineKind
from monitor.detection.windows import (
    baseline_ranges,
    recent_range,
    report_time,
    same_hours_ranges,
    trailing_range,
)

from .builders import config

DAY = 86400.0
AS_OF = 1_764_770_400.0  # a multiple of 60


def test_the_report_time_is_aligned_behind_the_settle_time() -> None:
    minutely = config(interval=60)
    assert report_time(minutely, AS_OF + 30) == AS_OF
    assert report_time(minutely, AS_OF + 29.9) == AS_OF - 60
    assert report_time(minutely, AS_OF + 89.9) == AS_OF
    assert report_time(config(), AS_OF + 30) == AS_OF - AS_OF % 300  # the default: every 5 minutes


@settings(max_examples=100)
@given(st.floats(min_value=0, max_value=59.999))
def test_replicas_within_one_interval_agree(offset: float) -> None:
    assert report_time(config(), AS_OF + 30 + offset) == AS_OF


def test_the_recent_window_ends_at_the_report_time() -> None:
    assert recent_range(config(), AS_OF) == (AS_OF - 1800, AS_OF)


def test_the_same_hours_of_each_previous_day() -> None:
    ranges = same_hours_ranges(config(), AS_OF)
    assert ranges == [(AS_OF - 1800 - k * DAY, AS_OF - k * DAY) for k in range(1, 8)]


def test_a_compressed_period() -> None:
    short = config(recent="1m", period="10m", baseline="35m", trailing="5m")
    assert same_hours_ranges(short, AS_OF) == [(AS_OF - 60 - k * 600, AS_OF - k * 600) for k in (1, 2, 3)]
    assert trailing_range(short, AS_OF) == (AS_OF - 360, AS_OF - 60)


def test_no_seasonality_has_no_same_hours() -> None:
    assert same_hours_ranges(config(seasonality="none"), AS_OF) == []


def test_the_trailing_window_is_just_before_the_recent_one() -> None:
    assert trailing_range(config(), AS_OF) == (AS_OF - 1800 - DAY, AS_OF - 1800)
    both = baseline_ranges(config(), AS_OF)
    assert both[BaselineKind.TRAILING] == [trailing_range(config(), AS_OF)]
    assert len(both[BaselineKind.SAME_HOURS]) == 7
