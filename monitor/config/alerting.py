"""The `alerting` config section: how `agent-monitor rules` writes Prometheus rules from the thresholds and
SLOs that sit on each evaluator (the thresholds themselves live in `evaluators`)."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import ConfigDict, Field, field_validator

from .units import Duration, Label, NonNegativeDuration, Ratio, Section

_LABEL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MATCHER = r'[A-Za-z_]\w*\s*(=~|!=|!~|=)\s*"[^"]*"'
_SELECTOR = re.compile(rf"{_MATCHER}(\s*,\s*{_MATCHER})*")
# {external_url}: `api.external_url`, else the metrics port's address (config/address.py)
TRACES_URL_TEMPLATE = "{external_url}/review?evaluator={evaluator}&service={service}&since={window}"
EXPLAIN_URL_TEMPLATE = "{external_url}/review/explain?evaluator={evaluator}&service={service}&since={window}"
_RESERVED = {"alertname", "severity", "evaluator", "service", "slo", "window"}


class HealthAlertsConfig(Section):
    """The daemon's own health alerts (receivers refusing, drops, backlog, judges down or short of capacity,
    scrape down)."""

    model_config = ConfigDict(validate_by_name=True, validate_by_alias=True)

    enabled: bool = True
    for_: Duration = Field(default=600.0, alias="for")
    severity: Literal["warning", "critical", "info"] = "warning"
    refused_ratio: Annotated[float, Field(gt=0, le=1)] = 0.05  # share of spans refused over 10m
    queue_depth: Annotated[int, Field(gt=0)] = 200  # traces waiting for a worker, sustained
    judge_capacity_skips: Annotated[int, Field(ge=0)] = 0  # judgements skipped for lack of judge capacity over 10m


UsdPerHour = Annotated[float, Field(ge=0, strict=True, allow_inf_nan=False)]  # a number, not text or a bool


class SpendAlertConfig(Section):
    """`AgentSpendOverBudget`: a service whose LLM calls cost more than `max_usd_per_hour` over the last hour, for
    `for`, fires it. Off while `max_usd_per_hour` is null (the default); the spend recording rules are always
    written."""

    model_config = ConfigDict(validate_by_name=True, validate_by_alias=True)

    max_usd_per_hour: UsdPerHour | None = None
    for_: NonNegativeDuration = Field(default=900.0, alias="for")
    severity: Literal["warning", "critical", "info"] = "warning"


# The evaluators of the default set that alert out of the box, and the pass ratio below which they do. Each
# normally passes on (nearly) every trace of a healthy agent, whatever the agent does: a drop means something
# broke. Left out: the budgets (latency, token_budget, cost_budget, llm_call_budget, agent_efficiency,
# response_length), whose default limits are guesses about an agent they do not know (set the params, then an
# alert), and pii_leak, secret_leak, refusal, response_language and user_sentiment, whose normal rates depend on
# the agent's domain (a support agent quotes its own e-mail address; a narrow agent declines off-topic questions;
# a bilingual audience mixes languages; support users start upset).
DEFAULT_MIN_PASS_RATIOS: dict[str, float] = {
    "error_free": 0.8,
    "tool_success_rate": 0.8,
    "hallucinated_tool": 0.9,
    "tool_arguments_valid": 0.9,
    "finish_reason": 0.9,
    "non_empty_response": 0.9,
    "loop_detection": 0.9,
}


class NewSignaturesAlertConfig(Section):
    """`AgentEvalNewFailureSignature`: a failure signature counted new (`signatures.window`, `min_count`) fires it."""

    model_config = ConfigDict(validate_by_name=True, validate_by_alias=True)

    enabled: bool = True
    for_: NonNegativeDuration = Field(default=0.0, alias="for")
    severity: Literal["warning", "critical", "info"] = "warning"

    def range_of(self, window: float) -> float:
        """The alert's range with `signatures.window` `window`: `for` + the window. The rule counts the signatures
        counted new over it (so it fires after `for` and resolves a window later), and so does the daemon's
        `agent_eval_failure_signatures_new_recent`."""
        return window + self.for_


class DefaultAlertsConfig(Section):
    """Pass-ratio alerts given to the evaluators named in `min_pass_ratio` that have no `alert:` of their own, and
    the new-failure-signature alert (`new_failure_signatures`, over every evaluator; off with `enabled: false`)."""

    model_config = ConfigDict(validate_by_name=True, validate_by_alias=True)

    enabled: bool = True
    window: Duration = 1800.0
    for_: Duration = Field(default=300.0, alias="for")
    min_samples: Annotated[int, Field(gt=0)] = 50
    severity: Literal["warning", "critical", "info"] = "warning"
    min_pass_ratio: dict[Label, Ratio] = Field(default_factory=lambda: dict(DEFAULT_MIN_PASS_RATIOS))
    new_failure_signatures: NewSignaturesAlertConfig = Field(default_factory=NewSignaturesAlertConfig)

    def new_signatures_alert(self) -> NewSignaturesAlertConfig | None:
        """The new-failure-signature alert's settings; None when it is off (here or with all default alerts)."""
        return self.new_failure_signatures if self.enabled and self.new_failure_signatures.enabled else None

    def alert_fields(self, label: str) -> dict[str, object] | None:
        """The `alert:` block (as data) evaluator `label` gets by default; None when it gets none."""
        if not self.enabled or label not in self.min_pass_ratio:
            return None
        return {
            "min_pass_ratio": self.min_pass_ratio[label],
            "window": self.window,
            "for": self.for_,
            "min_samples": self.min_samples,
            "severity": self.severity,
        }


class AlertingConfig(Section):
    """Inputs of `agent-monitor rules` besides the evaluators' `alert:` and `slo:` blocks."""

    job: Label = "agent-monitor"  # the Prometheus scrape job of the daemon (`up{job=...}`)
    selector: str = ""  # extra PromQL matchers for every query, e.g. 'namespace="agents"'
    group_interval: Duration = 60.0  # evaluation interval of the generated rule groups
    labels: dict[str, str] = Field(default_factory=dict)  # added to every alert (team, ...)
    runbook_url_template: str = ""  # {alert}, {evaluator}, {external_url} replaced; Go templates ({{ $labels.x }}) kept
    traces_url_template: str = TRACES_URL_TEMPLATE  # also {service} and {window}: the alert's service and window
    explain_url_template: str = EXPLAIN_URL_TEMPLATE  # the same: what sets the alert's failing traces apart
    default_alerts: DefaultAlertsConfig = Field(default_factory=DefaultAlertsConfig)
    health: HealthAlertsConfig = Field(default_factory=HealthAlertsConfig)
    spend: SpendAlertConfig = Field(default_factory=SpendAlertConfig)

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
