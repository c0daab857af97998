"""The daemon's configuration: pydantic models for every section (unknown keys are errors).

Load it with `monitor.config.load_config(path, env)` (`loader.py`); line-numbered errors are built in
`locate.py`. Durations are float seconds, sizes are int bytes.
"""

from __future__ import annotations

import difflib
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeInt,
    PositiveInt,
    PrivateAttr,
    field_validator,
    model_serializer,
    model_validator,
)

from evaluators.judges.settings import DEFAULT_MODEL as DEFAULT_JUDGE_MODEL
from evaluators.judges.settings import DEFAULT_RETRY_STATUS_CODES, JudgeSettings
from monitor.text import redact_url

from .alerting import AlertingConfig
from .evaluators import (
    AlertConfig,
    EvaluatorSet,
    EvaluatorsSection,
    Resolved,
    default_set_names,
    resolve_section,
)
from .locate import Loc, LocatedError
from .review import ReviewConfig
from .sources import AnySourceConfig, check_distinct_names
from .units import Duration, MiB, NonNegativeDuration, Port, Section, Size, parse_duration
from .variants import VariantsConfig

# --- receivers ----------------------------------------------------------------------------------


class GrpcReceiverConfig(Section):
    enabled: bool = True
    host: str = "0.0.0.0"
    port: Port = 4317
    max_message_bytes: Size = 16 * MiB
    # Calls whose message is still arriving, at once (gRPC assembles each one, up to max_message_bytes, in
    # memory before the receiver sees it). With all taken, the oldest call still without its message after
    # 1s is cut to make room; if none is, the new call is refused unread with the throttling answer.
    max_concurrent_reads: PositiveInt = 8


class HttpReceiverConfig(Section):
    enabled: bool = True
    host: str = "0.0.0.0"
    port: Port = 4318
    max_body_bytes: Size = 16 * MiB


def _existing_file(value: str | None) -> str | None:
    if value is not None and not Path(value).is_file():
        raise ValueError(f"file not found: {value}")
    return value


class TlsConfig(Section):
    """Serve a listener over TLS when both files are set (paths relative to the working directory)."""

    cert_file: str | None = None
    key_file: str | None = None

    _check_files = field_validator("cert_file", "key_file")(_existing_file)

    @model_validator(mode="after")
    def _both_or_neither(self) -> TlsConfig:
        if (self.cert_file is None) != (self.key_file is None):
            missing = "key_file" if self.key_file is None else "cert_file"
            raise LocatedError([((missing,), "cert_file and key_file must be set together")])
        return self

    @property
    def enabled(self) -> bool:
        return self.cert_file is not None


class AuthConfig(Section):
    """Require `Authorization: Bearer <token>` when a token is configured."""

    bearer_token: Annotated[str, Field(min_length=1)] | None = Field(default=None, repr=False)
    bearer_token_file: str | None = None
    _file_token: str | None = PrivateAttr(None)

    @model_validator(mode="after")
    def _one_source(self) -> AuthConfig:
        if self.bearer_token is not None and self.bearer_token_file is not None:
            raise LocatedError([(("bearer_token_file",), "set bearer_token or bearer_token_file, not both")])
        self._file_token = None
        if self.bearer_token_file is not None:
            try:
                token = Path(self.bearer_token_file).read_text(encoding="utf-8").strip()
            except (OSError, UnicodeDecodeError) as exc:
                problem = f"cannot read {self.bearer_token_file}: {getattr(exc, 'strerror', None) or exc}"
                raise LocatedError([(("bearer_token_file",), problem)]) from None
            if not token:
                raise LocatedError([(("bearer_token_file",), f"{self.bearer_token_file} is empty")])
            self._file_token = token
        return self

    def token(self) -> str | None:
        """The configured token (read from bearer_token_file at load time), or None for no auth."""
        return self.bearer_token if self.bearer_token is not None else self._file_token


class ReceiversConfig(Section):
    grpc: GrpcReceiverConfig = Field(default_factory=GrpcReceiverConfig)
    http: HttpReceiverConfig = Field(default_factory=HttpReceiverConfig)
    tls: TlsConfig = Field(default_factory=TlsConfig)
    auth: AuthConfig = Field(default_factory=AuthConfig)
    # Request bytes both receivers hold at once, counted as they arrive (an HTTP body chunk by chunk, a gRPC
    # message once whole); beyond it, requests get the OTLP throttling answer. Four maximum-size requests.
    max_inflight_bytes: Size = 64 * MiB
    # A request's body or message must arrive within read_timeout of its headers, with no gap longer than
    # read_idle_timeout without a byte (HTTP; gRPC shows no bytes before the whole message).
    read_timeout: Duration = 10.0
    read_idle_timeout: Duration = 5.0

    @model_validator(mode="after")
    def _inflight_fits_one_request(self) -> ReceiversConfig:
        sizes = {"grpc.max_message_bytes": self.grpc.max_message_bytes, "http.max_body_bytes": self.http.max_body_bytes}
        enabled = {"grpc.max_message_bytes": self.grpc.enabled, "http.max_body_bytes": self.http.enabled}
        largest = max(((size, key) for key, size in sizes.items() if enabled[key]), default=None)
        if largest is not None and self.max_inflight_bytes < largest[0]:
            problem = f"must be at least {largest[1]} ({largest[0]} bytes), so that one request of that size fits"
            raise LocatedError([(("max_inflight_bytes",), problem)])
        return self


class ApiConfig(Section):
    """The metrics port's review API and page (/api/..., /review): its bearer token and TLS. /metrics, /healthz,
    /readyz stay open. `allow_unauthenticated`: who reads trace content while no token is configured (api.auth,
    else receivers.auth): `loopback` (clients on this host or in this pod), `any`, or `none`."""

    auth: AuthConfig = Field(default_factory=AuthConfig)
    tls: TlsConfig = Field(default_factory=TlsConfig)
    allow_unauthenticated: Literal["loopback", "any", "none"] = "loopback"


# --- pipeline -----------------------------------------------------------------------------------


class AssemblyConfig(Section):
    quiet_period: Duration = 5.0
    max_trace_wait: Duration = 120.0
    max_pending_spans: PositiveInt = 500_000
    max_pending_bytes: Size = 128 * MiB
    max_spans_per_trace: PositiveInt = 10_000
    evaluated_trace_memory: PositiveInt = 100_000
    late_span_window: NonNegativeDuration = 600.0

    @model_validator(mode="after")
    def _ordered(self) -> AssemblyConfig:
        problems: list[tuple[Loc, str]] = []
        if self.quiet_period >= self.max_trace_wait:
            problems.append((("quiet_period",), f"must be less than max_trace_wait ({self.max_trace_wait:g}s)"))
        if self.max_spans_per_trace > self.max_pending_spans:
            problems.append((("max_spans_per_trace",), f"must not exceed max_pending_spans ({self.max_pending_spans})"))
        if problems:
            raise LocatedError(problems)
        return self


class EvaluationConfig(Section):
    queue_size: PositiveInt = 256
    timeout: Duration = 30.0
    mode: Literal["monitor", "experiment"] = "monitor"
    workers: Literal["auto"] | NonNegativeInt = "auto"

    def worker_count(self) -> int:
        """Worker processes to run: `auto` is the CPUs this process may use; 0 or 1 evaluates in-process."""
        return usable_cpus() if self.workers == "auto" else self.workers


def usable_cpus(cpu_max: Path = Path("/sys/fs/cgroup/cpu.max")) -> int:
    """CPUs this process may use: its affinity mask, capped by a cgroup v2 CPU quota (a container's CPU limit,
    which the affinity mask does not show: a pod limited to 2 CPUs on a 64-core node sees 64)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    try:
        quota, period = cpu_max.read_text().split()[:2]
        if quota != "max":
            cpus = min(cpus, max(1, math.ceil(int(quota) / int(period))))
    except (OSError, ValueError):
        pass
    return cpus


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


def _increasing(values: list[float]) -> list[float]:
    problems: list[tuple[Loc, str]] = [
        ((i,), f"buckets must increase: {values[i]:g} follows {values[i - 1]:g}")
        for i in range(1, len(values))
        if values[i] <= values[i - 1]
    ]
    if problems:
        raise LocatedError(problems)
    return values


class MetricsConfig(Section):
    host: str = "0.0.0.0"
    port: Port = 9464
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

    _check_buckets = field_validator("score_buckets", "duration_buckets")(_increasing)

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


class StoreConfig(Section):
    """The result store: what the review reads. SQLite at `path` (the embedded default: one file per replica), or
    PostgreSQL at `url` (`postgresql://user@host:5432/db`: one database every replica writes and reads; `path` is
    then unused; the password from the URL or $PGPASSWORD). `retention` and `max_size` bound it (the oldest go
    first); `max_steps` bounds the step tree kept per trace; `pool_size`: PostgreSQL connections per process;
    `connect_timeout`, `statement_timeout`, `lock_timeout`: PostgreSQL's bounds on a connection attempt, a
    statement and a wait for a lock (a server that hangs is given up on too: store/postgres/connection.py)."""

    enabled: bool = True
    path: str = "data/results.db"
    url: str | None = Field(default=None, repr=False)
    pool_size: Annotated[int, Field(ge=1, le=100)] = 4
    connect_timeout: Duration = 5.0
    statement_timeout: Duration = 10.0
    lock_timeout: Duration = 5.0
    retention: Duration = 7 * 86400.0
    max_size: Size = 1024 * MiB
    results: Literal["all", "failing"] = "all"
    max_steps: Annotated[int, Field(ge=0, le=10_000)] = 200

    @field_validator("url")
    @classmethod
    def _postgresql_url(cls, url: str | None) -> str | None:
        if url is None:
            return None
        scheme = url.split("://", 1)[0].lower() if "://" in url else ""
        if scheme not in ("postgresql", "postgres"):
            raise ValueError("must be a PostgreSQL URL, postgresql://user@host:5432/database (SQLite: use `path`)")
        import psycopg  # here, not at the top: a quarter of a second of imports that SQLite users never need
        from psycopg.conninfo import conninfo_to_dict

        try:
            conninfo_to_dict(url)
        except psycopg.ProgrammingError as exc:
            raise ValueError(f"is not a valid PostgreSQL URL: {str(exc).splitlines()[0]}") from None
        return url

    @property
    def location(self) -> str:
        """Where the store is, for messages: the path, or the URL without its password."""
        if self.url is None:
            return self.path
        return redact_url(self.url)


class JudgeRetryConfig(Section):
    """The judge client's own retries (google-genai HttpRetryOptions): exponential back-off with jitter; every
    attempt counts against `requests_per_minute`."""

    attempts: Annotated[int, Field(ge=1, le=10)] = 4
    initial_delay: Duration = 1.0
    max_delay: Duration = 30.0
    exp_base: Annotated[float, Field(ge=1)] = 2.0
    jitter: NonNegativeDuration = 1.0
    http_status_codes: list[Annotated[int, Field(ge=100, le=599)]] = Field(
        default_factory=lambda: list(DEFAULT_RETRY_STATUS_CODES)
    )


class JudgesConfig(Section):
    """LLM judges (Gemini API key or Vertex AI); the key falls back to GEMINI_API_KEY / GOOGLE_API_KEY.

    Limits apply to all judges together; a judge's own params (`max_concurrency`, `requests_per_minute`,
    `daily_token_budget`) narrow them. 0 means unlimited for `requests_per_minute` and `daily_token_budget`.
    """

    gemini_api_key: Annotated[str, Field(min_length=1)] | None = Field(default=None, repr=False)
    vertex_project: str | None = None
    vertex_location: str = "us-central1"
    model: str = DEFAULT_JUDGE_MODEL
    base_url: str | None = None
    api_version: str | None = None
    request_timeout: Duration = 30.0
    judgement_timeout: Duration = 120.0
    retry: JudgeRetryConfig = Field(default_factory=JudgeRetryConfig)
    max_concurrency: PositiveInt = 4
    requests_per_minute: NonNegativeInt = 60
    daily_token_budget: NonNegativeInt = 0
    cache_size: NonNegativeInt = 1024
    redact: bool = True
    max_pending: PositiveInt = 1000

    @property
    def enabled(self) -> bool:
        return bool(self.gemini_api_key or self.vertex_project)

    def settings(self) -> JudgeSettings:
        """The judge engine's settings (evaluators.judges.JudgeSettings: the same fields, the key as `api_key`;
        it forbids unknown fields, so the two cannot drift apart silently)."""
        return JudgeSettings(api_key=self.gemini_api_key, **self.model_dump(exclude={"gemini_api_key"}))


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
    api: ApiConfig = Field(default_factory=ApiConfig)
    store: StoreConfig = Field(default_factory=StoreConfig)
    judges: JudgesConfig = Field(default_factory=JudgesConfig)
    alerting: AlertingConfig = Field(default_factory=AlertingConfig)
    logging: LoggingConfig = Field(default_factory=LoggingConfig)
    shutdown: ShutdownConfig = Field(default_factory=ShutdownConfig)
    sources: list[AnySourceConfig] = Field(default_factory=list)
    variants: VariantsConfig = Field(default_factory=VariantsConfig)

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
