"""What the detector reads of the `drift` config section (monitor/config/drift.py's `DriftConfig` is one).

The detector takes the section through these protocols rather than importing it: the detection package depends
on no config module (`monitor.config.drift` is not among the config package's public modules), and a test
(tests/monitor/detection/test_drift_settings.py, checked by mypy too) holds `DriftConfig` to them.
"""

from __future__ import annotations

from typing import Protocol


class EffectSettings(Protocol):
    """`drift.min_effect`: the smallest change that counts."""

    @property
    def absolute(self) -> float: ...  # points, for unit-scale signals

    @property
    def relative(self) -> float: ...  # a fraction of the baseline, for magnitude signals


class SignalSettings(Protocol):
    """One signal's settings (`DriftConfig.override(signal, subject)`)."""

    @property
    def enabled(self) -> bool: ...

    @property
    def min_samples(self) -> int | None: ...  # None: the section's

    @property
    def min_effect(self) -> EffectSettings | None: ...  # None: the section's


class DriftSettings(Protocol):
    """The `drift` section: its windows (seconds), the tests' bounds and the per-signal overrides."""

    @property
    def recent(self) -> float: ...

    @property
    def baseline(self) -> float: ...

    @property
    def trailing(self) -> float: ...

    @property
    def seasonality(self) -> str: ...  # "hour_of_day" or "none"

    @property
    def period(self) -> float: ...

    @property
    def interval(self) -> float: ...

    @property
    def settle(self) -> float: ...

    @property
    def min_samples(self) -> int: ...

    @property
    def min_effect(self) -> EffectSettings: ...

    @property
    def false_discovery_rate(self) -> float: ...

    @property
    def max_agents(self) -> int: ...

    @property
    def max_subjects(self) -> int: ...

    def override(self, signal: str, subject: str = "") -> SignalSettings: ...


__all__ = ["DriftSettings", "EffectSettings", "SignalSettings"]
