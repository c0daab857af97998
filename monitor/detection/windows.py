"""The time ranges one report compares (epoch seconds, each `(since, until)`, `since` included, `until` not).

A report is made as of a time aligned to `drift.interval`, `drift.settle` seconds behind the clock (the time a
trace may take to reach the store): every replica that runs at about the same time computes the same report from
the same stored rows.
"""

from __future__ import annotations

import math

from .model import BaselineKind
from .settings import DriftSettings

Range = tuple[float, float]


def report_time(config: DriftSettings, now: float) -> float:
    """The time the report made at `now` is as of: the last multiple of `interval` at least `settle` before it."""
    return math.floor((now - config.settle) / config.interval) * config.interval


def recent_range(config: DriftSettings, as_of: float) -> Range:
    """The recent window: the `recent` seconds before the report's time."""
    return as_of - config.recent, as_of


def same_hours_ranges(config: DriftSettings, as_of: float) -> list[Range]:
    """The recent window's hours on each of the previous periods within `baseline`, nearest first (none with
    `seasonality: none`)."""
    if config.seasonality == "none":
        return []
    since, until = recent_range(config, as_of)
    periods = math.floor(config.baseline / config.period + 1e-9)
    return [(since - k * config.period, until - k * config.period) for k in range(1, periods + 1)]


def trailing_range(config: DriftSettings, as_of: float) -> Range:
    """The fallback baseline: the `trailing` seconds just before the recent window."""
    since, _ = recent_range(config, as_of)
    return since - config.trailing, since


def baseline_ranges(config: DriftSettings, as_of: float) -> dict[BaselineKind, list[Range]]:
    """Both baselines' ranges, by kind."""
    return {
        BaselineKind.SAME_HOURS: same_hours_ranges(config, as_of),
        BaselineKind.TRAILING: [trailing_range(config, as_of)],
    }


__all__ = ["Range", "baseline_ranges", "recent_range", "report_time", "same_hours_ranges", "trailing_range"]
