"""The `export` config section: evaluation results sent out as OpenTelemetry `gen_ai.evaluation.result` log
records over OTLP (`export.evaluations`, monitor/export/)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator

from .locate import LocatedError
from .units import Duration, Section

Results = Literal["failing", "all", "sampled"]
Protocol = Literal["grpc", "http/protobuf"]


def _existing_file(value: str | None) -> str | None:
    if value is not None and not Path(value).is_file():
        raise ValueError(f"file not found: {value}")
    return value


class ExportTlsConfig(Section):
    """The client side of TLS to the endpoint. `insecure`: plain text (None: true for an http:// endpoint, false
    for https://); `ca_file`: the CA bundle that signs the endpoint's certificate (None: the system's);
    `cert_file`/`key_file`: a client certificate (mTLS), set together."""

    insecure: bool | None = None
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None

    _check_files = field_validator("ca_file", "cert_file", "key_file")(_existing_file)

    @model_validator(mode="after")
    def _pair(self) -> ExportTlsConfig:
        if (self.cert_file is None) != (self.key_file is None):
            missing = "key_file" if self.key_file is None else "cert_file"
            raise LocatedError([((missing,), "cert_file and key_file must be set together")])
        return self


class EvaluationExportConfig(Section):
    """`results`: which results leave: `failing` (scored and failed), `all` (every result, skips included, without
    a score label), `sampled` (every scored result of a `sample` fraction of the traces, chosen on the trace id so
    a trace's results go together). `queue_size`: records waiting to be sent, at most (beyond it they are dropped
    and counted); `batch_size`: records per export request."""

    enabled: bool = False
    endpoint: str | None = None
    protocol: Protocol = "grpc"
    headers: dict[str, str] = Field(default_factory=dict, repr=False)
    tls: ExportTlsConfig = Field(default_factory=ExportTlsConfig)
    timeout: Duration = 5.0
    results: Results = "failing"
    sample: Annotated[float, Field(gt=0, le=1)] = 0.1
    queue_size: Annotated[int, Field(ge=1, le=10_000_000)] = 10_000
    batch_size: Annotated[int, Field(ge=1, le=100_000)] = 512

    @field_validator("endpoint")
    @classmethod
    def _url(cls, endpoint: str | None) -> str | None:
        if endpoint is None:
            return None
        parts = urlsplit(endpoint)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"expected http://host:port or https://host:port[/path], got {endpoint!r}")
        try:
            parts.port  # noqa: B018 (raises on a bad port)
        except ValueError as exc:
            raise ValueError(f"{endpoint!r}: {exc}") from None
        return endpoint

    @model_validator(mode="after")
    def _endpoint_when_enabled(self) -> EvaluationExportConfig:
        if self.enabled and self.endpoint is None:
            raise LocatedError([(("endpoint",), "required when export.evaluations.enabled is true")])
        if self.endpoint is not None and self.tls.insecure and self.endpoint.startswith("https://"):
            raise LocatedError([(("tls", "insecure"), "is true but the endpoint is https://")])
        return self

    @property
    def insecure(self) -> bool:
        """Plain text to the endpoint: `tls.insecure`, else whether the endpoint is http://."""
        if self.tls.insecure is not None:
            return self.tls.insecure
        return not (self.endpoint or "").startswith("https://")


class ExportConfig(Section):
    """What the daemon sends out besides its metrics: `evaluations`, every result as an OTLP log record."""

    evaluations: EvaluationExportConfig = Field(default_factory=EvaluationExportConfig)
