"""In-process alert thresholds on windowed pass ratios."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Protocol


class VerdictWindow(Protocol):
    """What a rule reads of one window of verdicts (`monitor.metrics.windows.WindowSnapshot` is one): metrics
    imports alerting, never the other way."""

    @property
    def verdicts(self) -> int: ...

    @property
    def pass_ratio(self) -> float | None: ...


@dataclass(frozen=True, slots=True)
class AlertRule:
    """A minimum pass ratio for one evaluator, judged over `window_seconds` once `min_samples` verdicts exist;
    it fires once the ratio has stayed below the minimum for `for_seconds` (Prometheus's `for`).

    With fewer verdicts in the window the alert keeps its last state (it does not resolve for lack of data).
    """

    name: str
    min_pass_ratio: float
    window_seconds: float = 300.0
    min_samples: int = 1
    severity: str = "warning"
    for_seconds: float = 0.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.min_pass_ratio <= 1.0:
            raise ValueError(f"alert {self.name}: min_pass_ratio must be within [0, 1], got {self.min_pass_ratio}")
        if self.window_seconds <= 0:
            raise ValueError(f"alert {self.name}: window_seconds must be positive, got {self.window_seconds}")
        if self.for_seconds < 0:
            raise ValueError(f"alert {self.name}: for_seconds must not be negative, got {self.for_seconds}")
        if self.min_samples < 0:
            raise ValueError(f"alert {self.name}: min_samples must not be negative, got {self.min_samples}")

    def decides(self, window: VerdictWindow) -> bool:
        """True when the window holds at least one and at least `min_samples` verdicts."""
        return window.pass_ratio is not None and window.verdicts >= self.min_samples

    def breached(self, window: VerdictWindow) -> bool:
        """True when the window decides and its pass ratio is below the minimum."""
        ratio = window.pass_ratio
        return self.decides(window) and ratio is not None and ratio < self.min_pass_ratio


class AlertState(NamedTuple):
    """The current state of one alert for one (evaluator, service)."""

    evaluator: str
    service: str
    alert: str
    active: bool  # firing: breached for at least `for`
    pass_ratio: float | None
    samples: int
    pending: bool = False  # breached, but not yet for `for`


class AlertTrack:
    """The `for` bookkeeping of one alert: since when the threshold has been breached, and the last state."""

    __slots__ = ("active", "breached_since")

    def __init__(self) -> None:
        self.breached_since: float | None = None
        self.active = False

    def update(self, rule: AlertRule, window: VerdictWindow, now: float) -> None:
        """Advance with the window seen at `now`; a window that does not decide changes nothing."""
        if not rule.decides(window):
            return
        if rule.breached(window):
            if self.breached_since is None:
                self.breached_since = now
            self.active = now - self.breached_since >= rule.for_seconds
        else:
            self.breached_since = None
            self.active = False

    @property
    def pending(self) -> bool:
        return self.breached_since is not None and not self.active
