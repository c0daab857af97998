"""A change in one line for people (the Changes page, the `changes` command, an alert's description), e.g.
"response_length mean 180 → 410 chars (+128 %) against the trailing 24 h, since 14:05 UTC, with new version 1.5".
"""

from __future__ import annotations

import time

from .model import BaselineKind, SignalState, Statistic
from .settings import DriftSettings
from .signals import SIGNALS


def duration_phrase(seconds: float) -> str:
    """'7 days', '24 h', '30 min', '45 s': the largest unit that divides the duration, else hours."""
    for unit, name in ((86400, "days"), (3600, "h"), (60, "min")):
        if seconds >= unit and seconds % unit == 0:
            count = int(seconds // unit)
            if unit == 86400 and count < 7:
                return f"{count * 24} h"
            return f"{count} {name}"
    if seconds >= 3600:
        return f"{seconds / 3600:.3g} h"
    return f"{seconds:g} s"


def window_phrase(kind: BaselineKind, config: DriftSettings | None = None) -> str:
    """What a baseline is: 'the same hours of the last 7 days' or 'the trailing 24 h' (without the config, no
    lengths)."""
    if kind is BaselineKind.SAME_HOURS:
        if config is None:
            return "the same hours of the previous days"
        days = int(config.baseline // config.period + 1e-9)
        return "the same hours of the previous day" if days == 1 else f"the same hours of the last {days} days"
    return "the trailing window" if config is None else f"the trailing {duration_phrase(config.trailing)}"


def format_value(value: float | None, unit: str) -> str:
    """A value for people: ratios and scores with 2 decimals, dollars with 4 significant digits, seconds and
    counts with 3 (whole numbers from 100 on)."""
    if value is None:
        return "–"
    if unit in ("ratio", "score"):
        return f"{value:.2f}"
    if unit == "USD":
        return f"{value:.4g} USD"
    if unit == "seconds":  # under 0.1 s in milliseconds (a 5 ms latency is not "0.005 s")
        return f"{value:.3g} s" if abs(value) >= 0.1 or value == 0 else f"{value * 1000:.3g} ms"
    return f"{value:.0f} {unit}" if abs(value) >= 100 else f"{value:.3g} {unit}"


def _change(state: SignalState, unit: str) -> str:
    b, r = state.baseline.mean, state.recent.mean
    if unit in ("ratio", "score"):
        return f"{format_value(b, unit)} → {format_value(r, unit)}"
    numbers = f"{format_value(b, unit).rsplit(' ', 1)[0]} → {format_value(r, unit)}"
    if b and r is not None:
        return f"{numbers} ({(r / b - 1) * 100:+.0f} %)"
    return f"{numbers} (from none)" if r else numbers


def _since(since: float, now: float | None) -> str:
    moment = time.gmtime(since)
    same_day = now is None or time.gmtime(now)[:3] == moment[:3]
    return time.strftime("%H:%M UTC" if same_day else "%Y-%m-%d %H:%M UTC", moment)


def describe(state: SignalState, config: DriftSettings | None = None, now: float | None = None) -> str:
    """The change of one signal in one line: the signal (and its subject), baseline → recent, the baseline it is
    measured against, since when (the date too when that is not `now`'s day), and the new versions."""
    signal = SIGNALS.get(state.signal)
    unit = signal.unit if signal is not None else ""
    name = f"{state.signal}:{state.subject}" if state.subject else state.signal
    mean = " mean" if state.statistic is Statistic.MEAN else ""
    text = f"{name}{mean} {_change(state, unit)} against {window_phrase(state.baseline_kind, config)}"
    if state.since is not None:
        text += f", since {_since(state.since, now)}"
    if state.recent_variants:
        versions = ", ".join(state.recent_variants)
        text += f", with new version{'s' if len(state.recent_variants) > 1 else ''} {versions}"
    return text


__all__ = ["describe", "duration_phrase", "format_value", "window_phrase"]
