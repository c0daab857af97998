"""The `external_evaluations` config section: the evaluations an application makes itself, sent as
OpenTelemetry `gen_ai.evaluation.result` events (log records on the daemon's logs receiver, or span events), taken
in as results of external evaluators (monitor/engine/external_results.py).

A result's verdict comes from its `gen_ai.evaluation.score.label` (one of `pass_labels` or `fail_labels`, compared
case-insensitively), else from `thresholds[name]` on its `gen_ai.evaluation.score.value` (the score passes at or
above it); with neither, the result is a skip of reason `no_verdict`. At most `max_evaluators` distinct names are
taken per process (later ones are counted as `__other__`) and `max_per_trace` results per trace. `alerts` and
`slos`, keyed by the evaluator's metric label, are those of a configured evaluator's `alert:` and `slo:`: the
in-process alert states and the rules `agent-monitor rules` writes.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_validator

from .evaluators import AlertConfig, SloConfig
from .units import Section

PASS_LABELS = (
    "pass", "passed", "true", "yes", "ok", "good", "correct", "relevant", "faithful", "grounded", "safe", "success",
    "succeeded", "valid", "accepted", "positive",
)  # fmt: skip
FAIL_LABELS = (
    "fail", "failed", "false", "no", "bad", "incorrect", "irrelevant", "unfaithful", "ungrounded", "unsafe", "failure",
    "hallucinated", "hallucination", "toxic", "invalid", "rejected", "negative",
)  # fmt: skip

Label = Annotated[str, Field(min_length=1, max_length=64)]


class ExternalEvaluationsConfig(Section):
    enabled: bool = True
    pass_labels: list[Label] = Field(default_factory=lambda: list(PASS_LABELS), max_length=256)
    fail_labels: list[Label] = Field(default_factory=lambda: list(FAIL_LABELS), max_length=256)
    thresholds: dict[Annotated[str, Field(min_length=1, max_length=128)], float] = Field(
        default_factory=dict, max_length=1000
    )
    max_evaluators: Annotated[int, Field(ge=1, le=1000)] = 50
    max_per_trace: Annotated[int, Field(ge=1, le=10_000)] = 100
    alerts: dict[Annotated[str, Field(min_length=1, max_length=128)], AlertConfig] = Field(
        default_factory=dict, max_length=1000
    )
    slos: dict[Annotated[str, Field(min_length=1, max_length=128)], SloConfig] = Field(
        default_factory=dict, max_length=1000
    )

    @field_validator("pass_labels", "fail_labels")
    @classmethod
    def _folded(cls, labels: list[str]) -> list[str]:
        return [label.strip().casefold() for label in labels]

    @field_validator("fail_labels")
    @classmethod
    def _disjoint(cls, labels: list[str], info: object) -> list[str]:
        passing = set(getattr(info, "data", {}).get("pass_labels") or ())
        both = sorted(passing & set(labels))
        if both:
            raise ValueError(f"labels both passing and failing: {', '.join(both)}")
        return labels


__all__ = ["FAIL_LABELS", "PASS_LABELS", "ExternalEvaluationsConfig"]
