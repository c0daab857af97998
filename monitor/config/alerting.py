"""The `alerting` config section: how `agent-monitor rules` writes Prometheus rules from the thresholds and
SLOs that sit on each evaluator (the thresholds themselves live in `evaluators`)."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import ConfigDict, Field, field_validator

from .units import Duration, Label, Section

_LABEL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MATCHER = r'[A-Za-z_]\w*\s*(=~|!=|!~|=)\s*"[^"]*"'
_SELECTOR = re.compile(rf"{_MATCHER}(\s*,\s*{_MATCHER})*")
_RESERVED = {"alertname", "severity", "evaluator", "service", "slo", "window"}


class HealthAlertsConfig(Section):
    """The daemon's own health alerts (receivers refusing, drops, backlog, judges, scrape down)."""

    model_config = ConfigDict(validate_by_name=True, validate_by_alias=True)

    enabled: bool = True
    for_: Duration = Field(default=600.0, alias="for")
    severity: Literal["warning", "critical", "info"] = "warning"
    refused_ratio: Annotated[float, Field(gt=0, le=1)] = 0.05  # share of spans refused over 10m
    queue_depth: Annotated[int, Field(gt=0)] = 200  # traces waiting for a worker, sustained


class AlertingConfig(Section):
    """Inputs of `agent-monitor rules` besides the evaluators' `alert:` and `slo:` blocks."""

    job: Label = "agent-monitor"  # the Prometheus scrape job of the daemon (`up{job=...}`)
    selector: str = ""  # extra PromQL matchers for every query, e.g. 'namespace="agents"'
    group_interval: Duration = 60.0  # evaluation interval of the generated rule groups
    labels: dict[str, str] = Field(default_factory=dict)  # added to every alert (team, ...)
    runbook_url_template: str = ""  # {alert} and {evaluator} replaced; Go templates ({{ $labels.x }}) kept
    traces_url_template: str = "http://localhost:9464/review?evaluator={evaluator}&since=1h"
    health: HealthAlertsConfig = Field(default_factory=HealthAlertsConfig)

    @field_validator("labels")
    @classmethod
    def _label_names(cls, labels: dict[str, str]) -> dict[str, str]:
        for name in labels:
            if not _LABEL_NAME.fullmatch(name) or name.startswith("__"):
                raise ValueError(f"invalid Prometheus label name {name!r}")
            if name in _RESERVED:
                raise ValueError(f"label {name!r} is set by the generated rules; choose another name")
        return labels

    @field_validator("selector")
    @classmethod
    def _selector(cls, selector: str) -> str:
        text = selector.strip().strip("{}").strip()
        if text and not _SELECTOR.fullmatch(text):
            raise ValueError(f'invalid selector {selector!r}: expected label matchers like namespace="agents"')
        return text
