"""The whole configuration (`MonitorConfig`), the `logging:` and `shutdown:` sections, and the checks that span
sections (distinct ports, compared evaluators, default alerts). Each other section has a module of its own
(receivers, security, api, pipeline, metrics, store, judges, sources, review, variants, sessions, alerting,
evaluators, export); the names importers used from here before the split are re-exported.

Load it with `monitor.config.load_config(path, env)` (`loader.py`); line-numbered errors are built in
`locate.py`. Durations are float seconds, sizes are int bytes.
"""

from __future__ import annotations

import difflib
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from .alerting import AlertingConfig
from .api import ApiConfig
from .drift import DriftConfig
from .evaluators import (
    AlertConfig,
    EvaluatorSet,
    EvaluatorsSection,
    Resolved,
    default_set_names,
    resolve_section,
)
from .explain import ExplainConfig
from .export import ExportConfig
from .external import ExternalEvaluationsConfig
from .intake import IntakeConfig
from .judges import JudgeRetryConfig, JudgesConfig
from .locate import Loc, LocatedError
from .metrics import DEFAULT_DURATION_BUCKETS, DEFAULT_SCORE_BUCKETS, MetricsConfig, Window
from .pipeline import AssemblyConfig, EvaluationConfig, usable_cpus
from .pricing import PricingConfig
from .receivers import GrpcReceiverConfig, HttpReceiverConfig, ReceiversConfig
from .review import ReviewConfig
from .security import AuthConfig, TlsConfig
from .sessions import SessionsConfig
from .signatures import SignaturesConfig
from .sources import AnySourceConfig, check_distinct_names
from .store import StoreConfig
from .units import NonNegativeDuration, Section
from .variants import VariantsConfig

__all__ = [
    "DEFAULT_DURATION_BUCKETS",
    "DEFAULT_SCORE_BUCKETS",
    "ApiConfig",
    "AssemblyConfig",
    "AuthConfig",
    "EvaluationConfig",
    "GrpcReceiverConfig",
    "HttpReceiverConfig",
    "JudgeRetryConfig",
    "JudgesConfig",
    "LoggingConfig",
    "MetricsConfig",
    "MonitorConfig",
    "ReceiversConfig",
    "ShutdownConfig",
    "StoreConfig",
    "TlsConfig",
    "Window",
    "usable_cpus",
]


class LoggingConfig(Section):
    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    format: Literal["text", "json"] = "text"
    per_span_problem_rate: Annotated[int, Field(ge=0)] = 10

    @field_validator("level", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value


class ShutdownConfig(Section):
    grace_period: NonNegativeDuration = 30.0


class MonitorConfig(Section):
    """The whole configuration; every section has defaults, so `{}` is a valid config."""

    receivers: ReceiversConfig = Field(default_factory=ReceiversConfig)
    assembly: AssemblyConfig = Field(default_factory=AssemblyConfig)
    evaluation: EvaluationConfig = Field(default_factory=EvaluationConfig)
    evaluators: EvaluatorsSection = None
    metrics: MetricsConfig = Field(default_factory=MetricsConfig)
    review: ReviewConfig = Field(default_factory=ReviewConfig)
    signatures: SignaturesConfig = Field(default_factory=SignaturesConfig)
    drift: DriftConfig = Field(default_factory=DriftConfig)
    explain: ExplainConfig = Field(default_factory=ExplainConfig)
    external_evaluations: ExternalEvaluationsConfig = Field(default_factory=ExternalEvaluationsConfig)
    pricing: PricingConfig = Field(default_factory=PricingConfig)
    api: ApiConfig = Field(default_factory=ApiConfig)
    store: StoreConfig = Field(default_factory=StoreConfig)
    intake: IntakeConfig = Field(default_factory=IntakeConfig)
    judges: JudgesConfig = Field(default_factory=JudgesConfig)
    alerting: AlertingConfig = Field(default_factory=AlertingConfig)
    logging: LoggingConfig = Field(default_factory=LoggingConfig)
    shutdown: ShutdownConfig = Field(default_factory=ShutdownConfig)
    sources: list[AnySourceConfig] = Field(default_factory=list)
    variants: VariantsConfig = Field(default_factory=VariantsConfig)
    sessions: SessionsConfig = Field(default_factory=SessionsConfig)
    export: ExportConfig = Field(default_factory=ExportConfig)

    _distinct_source_names = field_validator("sources")(check_distinct_names)

    @model_validator(mode="after")
    def _distinct_ports(self) -> MonitorConfig:
        listeners: list[tuple[Loc, int]] = [
            (("receivers", kind, "port"), getattr(self.receivers, kind).port)
            for kind in ("grpc", "http")
            if getattr(self.receivers, kind).enabled
        ]
        listeners.append((("metrics", "port"), self.metrics.port))
        problems: list[tuple[Loc, str]] = []
        for index, (loc, port) in enumerate(listeners):
            for other_loc, other_port in listeners[index + 1 :]:
                if port and port == other_port:
                    problems.append((other_loc, f"port {port} is also used by {'.'.join(map(str, loc))}"))
        if problems:
            raise LocatedError(problems)
        return self

    @model_validator(mode="after")
    def _compared_evaluators_exist(self) -> MonitorConfig:
        """Each `variants.compare` entry names an evaluator of the resulting set (pairwise judges are their own)."""
        compare = self.variants.compare
        if not compare:
            return self
        labels = [r.entry.label for r in self.evaluator_entries()]
        problems: list[tuple[Loc, str]] = []
        for i, entry in enumerate(compare):
            if entry.evaluator not in labels:
                close = difflib.get_close_matches(entry.evaluator, labels, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else f" ({', '.join(labels)})"
                problems.append(
                    (
                        ("variants", "compare", i, "evaluator"),
                        f"{entry.evaluator!r} is not a configured evaluator{hint}",
                    )
                )
        if problems:
            raise LocatedError(problems)
        return self

    @model_validator(mode="after")
    def _default_alerts_name_default_builtins(self) -> MonitorConfig:
        """Each evaluator of `alerting.default_alerts.min_pass_ratio` is a builtin of the default set (a typo would
        silently give no alert)."""
        names = default_set_names()
        problems: list[tuple[Loc, str]] = []
        for label in self.alerting.default_alerts.min_pass_ratio:
            if label not in names:
                close = difflib.get_close_matches(label, names, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else f" ({', '.join(names)})"
                loc: Loc = ("alerting", "default_alerts", "min_pass_ratio", label)
                problems.append((loc, f"{label!r} is not a builtin of the default set{hint}"))
        if problems:
            raise LocatedError(problems)
        return self

    def evaluator_entries(self) -> list[Resolved]:
        """The resulting evaluator set (either form of `evaluators` resolved), with each entry's config location.
        An entry of the default set (`evaluators` null, or a mapping with `defaults: true`) without an `alert:` of
        its own gets the one of `alerting.default_alerts`, if any; the list form is written out in full."""
        names = default_set_names()
        resolved = resolve_section(self.evaluators, names)
        if not (self.evaluators is None or (isinstance(self.evaluators, EvaluatorSet) and self.evaluators.defaults)):
            return resolved
        defaults = self.alerting.default_alerts
        return [
            Resolved(r.entry.model_copy(update={"alert": AlertConfig.model_validate(fields)}), r.loc)
            if r.entry.alert is None
            and r.entry.label in names
            and "add" not in r.loc
            and (fields := defaults.alert_fields(r.entry.label)) is not None
            else r
            for r in resolved
        ]

    def api_token(self) -> str | None:
        """The token the review API requires: api.auth's, else the receivers' (None: the API is open)."""
        return self.api.auth.token() or self.receivers.auth.token()

    def to_dict(self) -> dict[str, Any]:
        """Plain data (YAML keys, durations in seconds, windows as labels) that loads back to an equal config."""
        return self.model_dump(mode="json", by_alias=True)
