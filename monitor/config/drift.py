"""The `drift` config section: each agent's signals tested against its own baseline (monitor/detection), exported
as agent_quality_* metrics and the AgentQualityRegression / AgentBehaviourDrift alerts.

Windows: the recent window (`recent`, ending at the report's time) is compared with the same hours of the days
before it, as far back as `baseline` (`seasonality: hour_of_day`), or, when those hold fewer than `min_samples`
(less history) or with `seasonality: none`, with the `trailing` window just before the recent one. `period` is
the length of a season (a day); tests and benches shorten it with the others to compress time.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field, model_validator

from .units import Duration, NonNegativeDuration, Section

# The names of the signals (monitor/detection/signals.py's catalogue; tests/monitor/detection keeps the two the
# same). Spelt here because the detector reads store rows and the store reads the config: importing the catalogue
# would close a cycle config → detection → store → config.
SIGNAL_NAMES = (
    "pass_ratio",
    "score",
    "error_rate",
    "tool_success",
    "tool_share",
    "llm_calls",
    "tool_calls",
    "response_length",
    "tokens",
    "cost",
    "latency",
    "turns",
    "conversation_ended",
)


class MinEffect(Section):
    """The smallest change that counts: `absolute` points for signals in [0, 1] (ratios and scores), `relative`
    (a fraction of the baseline) for the others (calls, lengths, tokens, cost, latency, turns)."""

    absolute: Annotated[float, Field(ge=0, le=1)] = 0.03
    relative: Annotated[float, Field(ge=0, le=100)] = 0.2


class SignalOverride(Section):
    """One signal's own settings (`drift.signals.<name>`, or `<name>:<subject>` for one evaluator, tool or
    conversation ending); unset fields keep the section's."""

    enabled: bool = True
    min_samples: Annotated[int, Field(ge=2, le=10_000_000)] | None = None
    min_effect: MinEffect | None = None


class DriftAlertsConfig(Section):
    """The generated AgentQualityRegression (a quality signal worse than its baseline) and AgentBehaviourDrift
    (a behaviour signal changed either way) alerts."""

    model_config = ConfigDict(validate_by_name=True, validate_by_alias=True)

    quality: bool = True
    behaviour: bool = True
    for_: Duration = Field(default=600.0, alias="for")
    severity: Literal["warning", "critical", "info"] = "warning"
    behaviour_severity: Literal["warning", "critical", "info"] = "info"


class DriftConfig(Section):
    enabled: bool = True
    recent: Duration = 1800.0
    baseline: Duration = 7 * 86400.0  # how far back the same hours go
    trailing: Duration = 86400.0  # the fallback (and `seasonality: none`) baseline, before the recent window
    seasonality: Literal["hour_of_day", "none"] = "hour_of_day"
    period: Duration = 86400.0  # a season's length
    interval: Duration = 300.0  # how often a report is made (its time is aligned to it: every replica agrees)
    settle: Annotated[float, Field(ge=0)] = 30.0  # seconds a trace may take to reach the store
    min_samples: Annotated[int, Field(ge=2, le=10_000_000)] = 30  # in each window
    min_effect: MinEffect = Field(default_factory=MinEffect)
    false_discovery_rate: Annotated[float, Field(gt=0, lt=1)] = 0.01  # over all the signals of one report
    max_agents: Annotated[int, Field(ge=1, le=10_000)] = 200  # (service, agent) pairs reported, most traces first
    max_subjects: Annotated[int, Field(ge=1, le=1000)] = 20  # tools / endings per agent, most frequent first
    signals: dict[str, SignalOverride] = Field(default_factory=dict)
    exclude: list[str] = Field(default_factory=list)  # signals off: `<name>` or `<name>:<subject>`
    alerts: DriftAlertsConfig = Field(default_factory=DriftAlertsConfig)
    read_timeout: Duration = 20.0  # seconds a report's reads of the store may take
    keep_after: NonNegativeDuration = 600.0  # a bucket of aggregates is kept in the store once this old

    @model_validator(mode="after")
    def _windows(self) -> DriftConfig:
        problems = []
        if self.seasonality == "hour_of_day" and self.baseline < self.period:
            problems.append(f"baseline ({self.baseline:g} s) is shorter than a period ({self.period:g} s)")
        if self.recent >= self.period:
            problems.append(f"recent ({self.recent:g} s) must be shorter than a period ({self.period:g} s)")
        for name in [*self.signals, *self.exclude]:
            if name.split(":", 1)[0] not in SIGNAL_NAMES:
                problems.append(f"unknown signal {name!r} (signals: {', '.join(SIGNAL_NAMES)})")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def override(self, signal: str, subject: str = "") -> SignalOverride:
        """The settings of one signal: `<name>:<subject>`'s, else `<name>`'s, else the section's."""
        own = self.signals.get(f"{signal}:{subject}") if subject else None
        general = self.signals.get(signal)
        chosen = own or general
        excluded = signal in self.exclude or (bool(subject) and f"{signal}:{subject}" in self.exclude)
        return SignalOverride(
            enabled=not excluded and (chosen.enabled if chosen is not None else True),
            min_samples=(chosen.min_samples if chosen is not None else None) or self.min_samples,
            min_effect=(chosen.min_effect if chosen is not None else None) or self.min_effect,
        )
