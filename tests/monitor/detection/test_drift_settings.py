"""The drift config section is what the detector reads (`settings.DriftSettings`): mypy checks the assignment
below, and every member the protocols name is there at run time; the section names the catalogue's signals."""

from __future__ import annotations

from monitor.config.drift import SIGNAL_NAMES, DriftConfig
from monitor.detection.settings import DriftSettings, EffectSettings, SignalSettings
from monitor.detection.signals import SIGNALS


def _members(protocol: type) -> set[str]:
    return {name for name in vars(protocol) if not name.startswith("_")}


def test_the_config_section_is_the_detectors_settings() -> None:
    section: DriftSettings = DriftConfig()
    override: SignalSettings = section.override("error_rate")
    effect: EffectSettings = section.min_effect
    for value, protocol in ((section, DriftSettings), (override, SignalSettings), (effect, EffectSettings)):
        assert all(hasattr(value, name) for name in _members(protocol)), protocol


def test_the_config_knows_every_signal_of_the_catalogue() -> None:
    """The config checks its overrides' names against its own list (it cannot import the catalogue)."""
    assert tuple(SIGNALS) == SIGNAL_NAMES
