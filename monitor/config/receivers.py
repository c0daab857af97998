"""`receivers:` — the OTLP/gRPC and OTLP/HTTP listeners, their size and time bounds and their shared byte budget.

Each receiver takes this whole section (monitor/receivers/): its own subsection and the receiver-wide bounds;
the defaults here are the only ones."""

from __future__ import annotations

from pydantic import Field, PositiveInt, model_validator

from .locate import LocatedError
from .security import AuthConfig, TlsConfig
from .units import Duration, MiB, Port, Section, Size


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
    # A request's line and headers must all arrive within this long of its first byte; else the connection is cut.
    header_timeout: Duration = 10.0


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
