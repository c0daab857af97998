"""The `explain` config section: what differs between the failing traces and the passing ones
(monitor/explain), over the dimensions kept per stored trace, on the review's pages, `/api/v1/explain`,
`agent-monitor explain` and the `agent_eval_attribution` gauge.

`dimensions` adds attributes to the built-in ones (resource attributes first, then the spans'; the first value
found per trace). A value is tested once at least `min_traces` traces of the slice and its reference carry it;
factors are kept at a Benjamini–Hochberg false discovery rate of `fdr`. `max_traces`: the newest traces read per
explanation (older ones in the range are left out, and the answer says so).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_validator

from .units import Duration, Section

MAX_EXTRA_DIMENSIONS = 32


class AttributionConfig(Section):
    """The `agent_eval_attribution{evaluator,service,dimension,value}` gauge: the top factors (lift as the value)
    of each evaluator whose pass-ratio alert fires, explained over `range` every `interval`."""

    enabled: bool = True
    interval: Duration = 60.0
    range: Duration = 3600.0
    top: Annotated[int, Field(ge=1, le=3)] = 3


class ExplainConfig(Section):
    enabled: bool = True
    dimensions: list[Annotated[str, Field(min_length=1, max_length=128)]] = Field(
        default_factory=list, max_length=MAX_EXTRA_DIMENSIONS
    )
    language: bool = True  # the input's language (py3langid, in-package: no network)
    fdr: Annotated[float, Field(gt=0, lt=1)] = 0.01
    min_traces: Annotated[int, Field(ge=1, le=1_000_000)] = 5
    max_traces: Annotated[int, Field(ge=100, le=10_000_000)] = 200_000
    read_timeout: Duration = 20.0
    attribution: AttributionConfig = Field(default_factory=AttributionConfig)

    @field_validator("dimensions")
    @classmethod
    def _distinct(cls, names: list[str]) -> list[str]:
        names = [n.strip() for n in names]
        if len(set(names)) != len(names):
            raise ValueError("explain.dimensions names an attribute twice")
        return names


__all__ = ["AttributionConfig", "ExplainConfig"]
