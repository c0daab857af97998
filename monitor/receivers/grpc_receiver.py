"""OTLP/gRPC receiver (grpc.aio): TraceService/Export, LogsService/Export, gRPC health; MetricsService/Export is
accepted and dropped (`otlp_metrics`), as a Collector without a metrics pipeline would, through the same checks.

Memory before authentication: an interceptor asks the `Authenticator` about the call's metadata and
refuses with UNAUTHENTICATED before the request message is read. grpc.aio shows a message only once
it has arrived whole, so an Export handler bounds what it cannot see by a count: it takes one of the
`ReadSlots` of calls being read (with all taken, the oldest call still without its message after
PREEMPT_AFTER_SECONDS is cut to make room; if none is that old, the new call is refused unread),
reads the message within `read_timeout` (a call whose message does not arrive in time, or that was
cut, gets DEADLINE_EXCEEDED and is counted as `timeout`), gives the slot back, and only then
reserves the message's real size in the shared `InflightBytes` budget, released when the call is
answered. A call waiting for its message reserves no bytes, so idle callers cannot starve the
others. Refusals (no slot, no room in the budget) are the OTLP throttling answer: UNAVAILABLE with a RetryInfo (both the
`google.rpc.retryinfo-bin` trailer the Python exporter reads and the standard
`grpc-status-details-bin`), so exporters back off and retry. Messages over the size limit get
RESOURCE_EXHAUSTED from gRPC itself; gzip is accepted. The receiver counts its answers and refusals in
its own `ReceiverTelemetry`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, NoReturn, TypeVar

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from prometheus_client import CollectorRegistry

from monitor.auth import Authenticator, BearerAuth
from monitor.config.receivers import ReceiversConfig
from monitor.consumer import IngestOutcome, Outcome, TraceConsumer, settled
from monitor.metrics.intake import IntakeMetrics, ReceiverTelemetry
from monitor.receivers.inflight import InflightBytes, ReadSlots
from monitor.receivers.memory import MemoryReturner
from monitor.receivers.otlp_metrics import SERVICE_NAME as METRICS_SERVICE
from monitor.receivers.otlp_metrics import drop_metrics
from monitor.receivers.otlp_metrics import response as metrics_response

log = logging.getLogger(__name__)
_Request = TypeVar("_Request")
_Response = TypeVar("_Response")
RECEIVER = "grpc"
SERVICE_NAMES = (
    "opentelemetry.proto.collector.trace.v1.TraceService",
    "opentelemetry.proto.collector.logs.v1.LogsService",
    METRICS_SERVICE,
)
SIGNALS = ("traces", "logs", "metrics")  # of SERVICE_NAMES, in order
EXPORT_METHODS = frozenset(f"/{name}/Export" for name in SERVICE_NAMES)
INFLIGHT_RETRY_SECONDS = 1.0  # requests in flight are answered within milliseconds; retry soon
MAX_CONCURRENT_STREAMS = 100  # per connection (HTTP/2 SETTINGS): further calls wait at the client
PREEMPT_AFTER_SECONDS = 1.0  # with every read slot taken, a call still without its message after this is cut


def _retry_trailers(message: str, seconds: float) -> tuple[tuple[str, bytes], ...]:
    whole = int(seconds)
    delay = duration_pb2.Duration(seconds=whole, nanos=int((seconds - whole) * 1e9))
    retry = error_details_pb2.RetryInfo(retry_delay=delay)
    detail = any_pb2.Any()
    detail.Pack(retry)
    status = status_pb2.Status(code=code_pb2.UNAVAILABLE, message=message, details=[detail])
    return (
        ("google.rpc.retryinfo-bin", retry.SerializeToString()),
        ("grpc-status-details-bin", status.SerializeToString()),
    )


def _authorization(metadata: Any) -> str | None:
    for key, value in metadata or ():
        if key == "authorization":
            return value if isinstance(value, str) else None
    return None


class AuthInterceptor(grpc.aio.ServerInterceptor):
    """Refuse Export calls without the bearer token from their metadata, before the message is read.

    The refusal is a request-streaming handler that aborts without reading: a unary handler would
    make grpc.aio receive the whole message first."""

    def __init__(self, auth: Authenticator, telemetry: ReceiverTelemetry) -> None:
        self.auth = auth
        self.telemetry = telemetry
        self._refusal: grpc.RpcMethodHandler[Any, Any] = grpc.stream_unary_rpc_method_handler(self._unauthenticated)

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[_Request, _Response] | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[_Request, _Response] | None:
        if handler_call_details.method in EXPORT_METHODS and not self.auth.authorized(
            _authorization(handler_call_details.invocation_metadata)
        ):
            self.telemetry.request("UNAUTHENTICATED")
            self.telemetry.refused("unauthenticated")
            return self._refusal
        return await continuation(handler_call_details)

    @staticmethod
    async def _unauthenticated(request_iterator: Any, context: grpc.aio.ServicerContext) -> None:
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or invalid bearer token")


class ExportHandler:
    """One OTLP Export method: read slot, read (timed), budget, ingest, answer."""

    def __init__(
        self,
        consumer: TraceConsumer,
        telemetry: ReceiverTelemetry,
        signal: str,
        inflight: InflightBytes,
        reads: ReadSlots,
        read_timeout: float,
        memory: MemoryReturner | None = None,
    ) -> None:
        self.consumer = consumer
        self.telemetry = telemetry
        self.signal = signal
        self.inflight = inflight
        self.reads = reads
        self.read_timeout = read_timeout
        self.memory = memory

    async def export(self, request_iterator: AsyncIterator[bytes], context: grpc.aio.ServicerContext) -> bytes:
        telemetry, inflight = self.telemetry, self.inflight
        request = await self._read(context)
        size = len(request)
        try:
            if not inflight.try_acquire(size):
                telemetry.refused("throttled")
                await self._throttle(context, "too many request bytes in flight; retry later", INFLIGHT_RETRY_SECONDS)
            try:
                outcome = self._ingest(request)
            finally:
                inflight.release(size)
        finally:
            del request
            if self.memory is not None:
                self.memory.freed(size)
        outcome = await settled(outcome)  # the intake log has it on disk (or could not: throttled)
        telemetry.ingested(outcome)
        if outcome.outcome is Outcome.MALFORMED:
            telemetry.request("INVALID_ARGUMENT")
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, outcome.message)
        if outcome.outcome is Outcome.THROTTLED:
            await self._throttle(context, outcome.message, outcome.retry_after_seconds)
        telemetry.request("OK")
        return self._response(outcome.rejected, outcome.message)

    def _ingest(self, request: bytes) -> IngestOutcome:
        if self.signal == "metrics":
            return drop_metrics(request, "protobuf", self.telemetry.metric_points_dropped)
        return self.consumer.ingest(request, receiver=RECEIVER, encoding="protobuf", signal=self.signal)

    async def _read(self, context: grpc.aio.ServicerContext) -> bytes:
        """The request message, read in one of the read slots within `read_timeout` (or the call is aborted)."""
        telemetry = self.telemetry
        slot = self.reads.take()
        if slot is None:
            telemetry.refused("throttled")
            await self._throttle(context, "too many requests arriving at once; retry later", INFLIGHT_RETRY_SECONDS)
        try:
            # context.read(), not the request iterator: the iterator's generator frame would keep the
            # message alive after the call, as long as grpc.aio keeps the call's state.
            async with asyncio.timeout(self.read_timeout) as slot.timer:
                request = await context.read()
        except TimeoutError:
            request = None
        finally:
            self.reads.give_back(slot)
        if request is None:
            telemetry.refused("timeout")
            telemetry.request("DEADLINE_EXCEEDED")
            waited = f"{self.reads.preempt_after:g}s while other calls waited" if slot.preempted else ""
            await context.abort(
                grpc.StatusCode.DEADLINE_EXCEEDED,
                f"request message not received within {waited or f'{self.read_timeout:g}s'}",
            )
        if not isinstance(request, bytes):  # grpc.aio.EOF: the client sent no message
            telemetry.request("INVALID_ARGUMENT")
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "no request message")
        return request

    async def _throttle(self, context: grpc.aio.ServicerContext, message: str, seconds: float) -> NoReturn:
        self.telemetry.request("UNAVAILABLE")
        await context.abort(grpc.StatusCode.UNAVAILABLE, message, trailing_metadata=_retry_trailers(message, seconds))

    def _response(self, rejected: int, message: str) -> bytes:
        if self.signal == "logs":
            return logs_service_pb2.ExportLogsServiceResponse().SerializeToString()
        if self.signal == "metrics":
            return metrics_response().SerializeToString()
        response = trace_service_pb2.ExportTraceServiceResponse()
        if rejected:
            response.partial_success.rejected_spans = rejected
            response.partial_success.error_message = message
        return response.SerializeToString()


def _export_method(handler: ExportHandler) -> grpc.RpcMethodHandler:
    """Request-streaming on our side (a unary client sends one message): the handler decides whether
    to read the message at all. Both directions are raw bytes: our decoder parses the request once."""
    return grpc.stream_unary_rpc_method_handler(
        handler.export, request_deserializer=lambda data: data, response_serializer=lambda data: data
    )


class GrpcReceiver:
    """The OTLP/gRPC receiver of the `receivers:` section: its `grpc` subsection (host, port, message size, read
    slots) and the receivers' shared `read_timeout`; every default is the config's. `auth`: open to all when not
    given; `telemetry`: this receiver's counters (on a registry of its own when not given); `inflight`: the byte
    budget shared with the other receiver (one of its own, of `max_inflight_bytes`, when not given); `tls`: the
    (key, cert) PEM pair to serve with."""

    def __init__(
        self,
        config: ReceiversConfig,
        consumer: TraceConsumer,
        *,
        auth: Authenticator | None = None,
        telemetry: ReceiverTelemetry | None = None,
        inflight: InflightBytes | None = None,
        tls: tuple[bytes, bytes] | None = None,
        preempt_after: float = PREEMPT_AFTER_SECONDS,
    ) -> None:
        section = config.grpc
        self.consumer = consumer
        self.auth = auth or BearerAuth()
        self.telemetry = telemetry or IntakeMetrics(CollectorRegistry()).receiver(RECEIVER)
        self.host = section.host
        self.port = section.port
        self.max_message_bytes = section.max_message_bytes
        self.tls = tls
        self.inflight = inflight or InflightBytes(config.max_inflight_bytes)
        self.read_timeout = config.read_timeout
        self.reads = ReadSlots(section.max_concurrent_reads, preempt_after)  # calls whose message is still arriving
        self.memory = MemoryReturner()
        self.bound_port = section.port
        self._server: grpc.aio.Server | None = None
        self._health = health.aio.HealthServicer()  # grpcio-health-checking >= 1.60 always has it

    async def start(self) -> None:
        server = grpc.aio.server(
            interceptors=(AuthInterceptor(self.auth, self.telemetry),),
            options=[
                ("grpc.max_receive_message_length", self.max_message_bytes),
                ("grpc.max_send_message_length", 4 * 1024 * 1024),
                ("grpc.max_concurrent_streams", MAX_CONCURRENT_STREAMS),
                ("grpc.so_reuseport", 0),
                # No BDP probing: it opens every stream's flow-control window wide, so gRPC buffers the
                # messages of calls we refuse unread (a 16 MiB flood: peak RSS 355-495 MB with it,
                # 200-250 MB without). The trade-off (not measured here): fixed HTTP/2 windows can slow a
                # large message from a distant exporter; on 127.0.0.1 it makes no difference.
                ("grpc.http2.bdp_probe", 0),
            ],
            compression=None,
        )
        handlers = {
            name: ExportHandler(
                self.consumer, self.telemetry, signal, self.inflight, self.reads, self.read_timeout, self.memory
            )
            for name, signal in zip(SERVICE_NAMES, SIGNALS, strict=True)
        }
        server.add_generic_rpc_handlers(
            tuple(
                grpc.method_handlers_generic_handler(name, {"Export": _export_method(handler)})
                for name, handler in handlers.items()
            )
        )
        health_pb2_grpc.add_HealthServicer_to_server(self._health, server)
        address = f"{self.host}:{self.port}"
        try:
            if self.tls:
                key, cert = self.tls
                self.bound_port = server.add_secure_port(address, grpc.ssl_server_credentials([(key, cert)]))
            else:
                self.bound_port = server.add_insecure_port(address)
        except RuntimeError:  # grpc's "Failed to bind to address": in use, or not an address of this host
            self.bound_port = 0
        if not self.bound_port:
            raise OSError(
                f"cannot bind the OTLP/gRPC receiver to {address} "
                "(receivers.grpc: the port is in use or the host is not an address of this machine)"
            )
        await server.start()
        self._server = server
        await self._set_health(health_pb2.HealthCheckResponse.SERVING)
        log.info("OTLP/gRPC receiver listening on %s:%d", self.host, self.bound_port)

    async def _set_health(self, status: int) -> None:
        for name in ("", *SERVICE_NAMES):
            await self._health.set(name, status)

    async def shutdown(self, grace: float) -> None:
        """Stop taking requests; in-flight calls get `grace` seconds. Idempotent."""
        server, self._server = self._server, None
        if server is None:
            return
        await self._set_health(health_pb2.HealthCheckResponse.NOT_SERVING)
        await server.stop(grace)
