"""`metrics:` — the API server's address, the metrics windows, label caps and histogram buckets."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, PositiveInt, field_validator, model_serializer, model_validator

from .locate import Loc, LocatedError
from .units import Duration, Port, Section, parse_duration


class Window(BaseModel):
    """A metrics window: its label as written (e.g. "5m", the `window` label) and its length in seconds."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    label: str
    seconds: Annotated[float, Field(gt=0)]

    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, value: Any) -> Any:
        if isinstance(value, Window | Mapping):
            return value
        seconds = parse_duration(value)
        label = value.strip() if isinstance(value, str) else f"{seconds:g}s"
        return {"label": label, "seconds": seconds}

    @model_serializer
    def _as_text(self) -> str:
        return self.label


# The histograms' default buckets (the exporter's defaults too: metrics/exporter.py imports them).
DEFAULT_SCORE_BUCKETS: tuple[float, ...] = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 0.99, 1.0)
DEFAULT_DURATION_BUCKETS: tuple[float, ...] = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
DEFAULT_COST_BUCKETS: tuple[float, ...] = (
    0.0001,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    5.0,
)


def _increasing(values: list[float]) -> list[float]:
    problems: list[tuple[Loc, str]] = [
        ((i,), f"buckets must increase: {values[i]:g} follows {values[i - 1]:g}")
        for i in range(1, len(values))
        if values[i] <= values[i - 1]
    ]
    if problems:
        raise LocatedError(problems)
    return values


class WindowRebuildConfig(Section):
    """`metrics.rebuild`: at start, the windows and the in-process alert states are rebuilt from the results stored
    over the longest window (monitor/metrics/rebuild.py): at most `max_results` of them (the newest), read within
    `timeout`."""

    enabled: bool = True
    max_results: PositiveInt = 200_000
    timeout: Duration = 10.0


class MetricsConfig(Section):
    host: str = "0.0.0.0"
    port: Port = 9464
    # A request's line and headers must all arrive within this long of its first byte; else the connection is cut.
    header_timeout: Duration = 10.0
    windows: Annotated[list[Window], Field(min_length=1)] = Field(
        default_factory=lambda: [Window.model_validate("5m"), Window.model_validate("1h")]
    )
    window_sample_cap: PositiveInt = 10_000
    label_value_cap: PositiveInt = 50
    score_buckets: Annotated[list[Annotated[float, Field(gt=0, le=1)]], Field(min_length=1)] = Field(
        default_factory=lambda: list(DEFAULT_SCORE_BUCKETS)
    )
    duration_buckets: Annotated[list[Annotated[float, Field(gt=0)]], Field(min_length=1)] = Field(
        default_factory=lambda: list(DEFAULT_DURATION_BUCKETS)
    )

    cost_buckets: Annotated[list[Annotated[float, Field(gt=0)]], Field(min_length=1)] = Field(
        default_factory=lambda: list(DEFAULT_COST_BUCKETS)
    )

    rebuild: WindowRebuildConfig = Field(default_factory=WindowRebuildConfig)

    _check_buckets = field_validator("score_buckets", "duration_buckets", "cost_buckets")(_increasing)

    @field_validator("windows")
    @classmethod
    def _distinct_windows(cls, windows: list[Window]) -> list[Window]:
        problems: list[tuple[Loc, str]] = []
        seen: dict[float, str] = {}
        for i, window in enumerate(windows):
            if window.seconds in seen:
                problems.append(((i,), f"window {window.label!r} repeats {seen[window.seconds]!r}"))
            seen.setdefault(window.seconds, window.label)
        if problems:
            raise LocatedError(problems)
        return windows
