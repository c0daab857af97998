"""`sources:` — trace stores the daemon polls on a schedule (poll mode), besides or instead of receiving OTLP.

Each entry has a `type` (a row of SOURCE_TYPES: jaeger, tempo, phoenix, amp, otlp_files) and a `name` (unique:
the `source` label of the poll metrics and the key of its checkpoint). HTTP sources share the connection
settings of HttpSourceConfig; a token comes from `token`, `token_env` (the name of an environment variable) or
`token_file`, never logged.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal, NamedTuple, TypeAlias, Union, get_args

from pydantic import Field, PositiveInt, model_validator

from .units import Duration, Label, MiB, NonNegativeDuration, Section, Size


class SourceTlsConfig(Section):
    """TLS towards an HTTPS source: a private CA, a client certificate, or (tests, never production) no checks."""

    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    insecure_skip_verify: bool = False

    @model_validator(mode="after")
    def _pair(self) -> SourceTlsConfig:
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError("set both cert_file and key_file (a client certificate) or neither")
        return self


class SourceConfig(Section):
    """What every source has: when it runs and which time range each run reads."""

    if TYPE_CHECKING:  # each type's own `type: Literal[...]` (the discriminator); declared here for the checker
        type: str

    name: Label
    enabled: bool = True
    interval: Duration = 60.0  # between runs (a run that overruns delays the next: one at a time)
    backfill: NonNegativeDuration = 0.0  # a first run starts at now - backfill (0: traces from now on)
    settle_delay: NonNegativeDuration = 30.0  # a run reads traces up to now - settle_delay (still being written)
    overlap: NonNegativeDuration = 60.0  # each run reads again this much before its checkpoint (late arrivals)
    max_traces_per_run: PositiveInt = 10_000  # the rest waits for the next run (the checkpoint says where)
    # page requests a run makes at most (listings, searches, span pages; reads of otlp_files): past it the run
    # stops, counted as kind page_limit, and the next run goes on
    max_pages_per_run: PositiveInt = 2_000


class HttpSourceConfig(SourceConfig):
    """A trace store's HTTP API."""

    url: Annotated[str, Field(pattern=r"^https?://\S+$")]
    headers: dict[str, str] = Field(default_factory=dict, repr=False)
    token: str | None = Field(default=None, repr=False)  # sent as `Authorization: Bearer <token>`
    token_env: str | None = None
    token_file: str | None = None
    timeout: Duration = 30.0  # one HTTP request
    retries: Annotated[int, Field(ge=0, le=10)] = 3  # more attempts on 5xx, 429, timeouts and refused connections
    backoff: Duration = 1.0  # the first retry's delay, doubled for each next one (with jitter)
    page_size: Annotated[int, Field(ge=1, le=10_000)] = 100
    max_bytes_per_run: Size = 512 * MiB  # response bytes a run reads at most (kind byte_limit past it)
    tls: SourceTlsConfig = Field(default_factory=SourceTlsConfig)

    @model_validator(mode="after")
    def _one_token(self) -> HttpSourceConfig:
        given = [k for k in ("token", "token_env", "token_file") if getattr(self, k) is not None]
        if len(given) > 1:
            raise ValueError(f"set one of token, token_env, token_file (got {', '.join(given)})")
        return self

    def bearer_token(self) -> str | None:
        """The token from wherever the config says (ValueError when that variable or file is missing or empty)."""
        if self.token is not None:
            return self.token
        if self.token_env is not None:
            value = os.environ.get(self.token_env, "").strip()
            if not value:
                raise ValueError(f"sources.{self.name}.token_env: ${self.token_env} is not set")
            return value
        if self.token_file is not None:
            try:
                value = Path(self.token_file).read_text(encoding="utf-8").strip()
            except OSError as exc:
                raise ValueError(f"sources.{self.name}.token_file: cannot read {self.token_file}: {exc}") from None
            if not value:
                raise ValueError(f"sources.{self.name}.token_file: {self.token_file} is empty")
            return value
        return None


class JaegerSourceConfig(HttpSourceConfig):
    """Jaeger's API v3 (`/api/v3/traces`, OTLP JSON), one service per source."""

    type: Literal["jaeger"]
    service: Annotated[str, Field(min_length=1)]
    operation: str | None = None


class TempoSourceConfig(HttpSourceConfig):
    """Grafana Tempo: `/api/search` (TraceQL `query`, default every trace) then `/api/v2/traces/{id}`."""

    type: Literal["tempo"]
    query: str = "{}"


class PhoenixSourceConfig(HttpSourceConfig):
    """Arize Phoenix: a project's traces, their spans as OTLP (`/v1/projects/{project}/spans/otlpv1`).
    Phoenix keeps no resource attributes: `service` (default: the project's name) becomes `service.name`.
    `write_back`: each result is posted back as a Phoenix annotation on its span or trace."""

    type: Literal["phoenix"]
    project: Annotated[str, Field(min_length=1)] = "default"
    service: str | None = None
    write_back: bool = False


class AmpSourceConfig(HttpSourceConfig):
    """The WSO2 agent-manager trace service (`/api/v1/traces/export`)."""

    type: Literal["amp"]
    organization: str | None = None
    project: str | None = None
    agent: str | None = None
    environment: str | None = None


class OtlpFilesSourceConfig(SourceConfig):
    """A directory the OpenTelemetry Collector's file exporter writes (JSON lines, rotated files compressed with
    gzip or zstd), or OTLP dumps (`.pb`, `.json`). What was read is remembered per file (name and offset)."""

    type: Literal["otlp_files"]
    directory: Annotated[str, Field(min_length=1)]
    pattern: str = "*"  # file names to read in the directory (glob)
    interval: Duration = 5.0


class SourceType(NamedTuple):
    """A source type: its config class (whose `type: Literal[...]` names it) and its source class, as
    "module:Class", imported only when a source of this type is built (monitor.sources.factory.make_source)."""

    config: type[SourceConfig]
    source: str

    @property
    def name(self) -> str:
        """The `type:` value (the config class's Literal)."""
        (name,) = get_args(self.config.model_fields["type"].annotation)
        return str(name)


# Every source type. Adding one: its config class above, its source class in monitor/sources/ (taking that
# config), and a row here.
SOURCE_TYPES: dict[str, SourceType] = {
    kind.name: kind
    for kind in (
        SourceType(JaegerSourceConfig, "monitor.sources.jaeger:JaegerSource"),
        SourceType(TempoSourceConfig, "monitor.sources.tempo:TempoSource"),
        SourceType(PhoenixSourceConfig, "monitor.sources.phoenix.source:PhoenixSource"),
        SourceType(AmpSourceConfig, "monitor.sources.amp:AmpSource"),
        SourceType(OtlpFilesSourceConfig, "monitor.sources.otlp_files:OtlpFilesFeed"),
    )
}

if TYPE_CHECKING:
    AnySourceConfig: TypeAlias = SourceConfig
else:  # a `sources:` entry: the config class its `type` names
    AnySourceConfig = Annotated[
        Union[tuple(kind.config for kind in SOURCE_TYPES.values())],  # noqa: UP007 (built from the table)
        Field(discriminator="type"),
    ]


def check_distinct_names(sources: list[AnySourceConfig]) -> list[AnySourceConfig]:
    """`sources` when every name is distinct (ValueError otherwise)."""
    seen: set[str] = set()
    for source in sources:
        if source.name in seen:
            raise ValueError(f"two sources are named {source.name!r}: names must be distinct")
        seen.add(source.name)
    return sources
