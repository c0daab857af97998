"""OTLP/gRPC receiver (grpc.aio): TraceService/Export, LogsService/Export, gRPC health.

Throttling answers UNAVAILABLE with a RetryInfo (both the `google.rpc.retryinfo-bin` trailer the
Python exporter reads and the standard `grpc-status-details-bin`), so exporters back off and retry.
Messages over the size limit get RESOURCE_EXHAUSTED from gRPC itself; gzip is accepted.
"""

from __future__ import annotations

import logging
from typing import Any

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

from ..ingest import Ingestor, Outcome

log = logging.getLogger(__name__)
RECEIVER = "grpc"
SERVICE_NAMES = (
    "opentelemetry.proto.collector.trace.v1.TraceService",
    "opentelemetry.proto.collector.logs.v1.LogsService",
)


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


class _ExportHandler:
    def __init__(self, ingestor: Ingestor, signal: str) -> None:
        self.ingestor = ingestor
        self.signal = signal

    async def handle(self, request_bytes: bytes, context: grpc.aio.ServicerContext) -> tuple[int, str]:
        ingestor = self.ingestor
        metadata = {key: value for key, value in (context.invocation_metadata() or ())}
        if not ingestor.authorized(metadata.get("authorization")):
            ingestor.count_request(RECEIVER, "UNAUTHENTICATED")
            ingestor.refuse(RECEIVER, "unauthenticated")
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or invalid bearer token")
        outcome = ingestor.ingest(request_bytes, receiver=RECEIVER, encoding="protobuf", signal=self.signal)
        if outcome.outcome is Outcome.MALFORMED:
            ingestor.count_request(RECEIVER, "INVALID_ARGUMENT")
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, outcome.message)
        if outcome.outcome is Outcome.THROTTLED:
            ingestor.count_request(RECEIVER, "UNAVAILABLE")
            await context.abort(
                grpc.StatusCode.UNAVAILABLE,
                outcome.message,
                trailing_metadata=_retry_trailers(outcome.message, outcome.retry_after_seconds),
            )
        ingestor.count_request(RECEIVER, "OK")
        return outcome.rejected, outcome.message


class TraceServicer(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self, ingestor: Ingestor) -> None:
        self._handler = _ExportHandler(ingestor, "traces")

    async def Export(self, request_bytes: bytes, context: Any) -> trace_service_pb2.ExportTraceServiceResponse:
        rejected, message = await self._handler.handle(request_bytes, context)
        response = trace_service_pb2.ExportTraceServiceResponse()
        if rejected:
            response.partial_success.rejected_spans = rejected
            response.partial_success.error_message = message
        return response


class LogsServicer(logs_service_pb2_grpc.LogsServiceServicer):
    def __init__(self, ingestor: Ingestor) -> None:
        self._handler = _ExportHandler(ingestor, "logs")

    async def Export(self, request_bytes: bytes, context: Any) -> logs_service_pb2.ExportLogsServiceResponse:
        await self._handler.handle(request_bytes, context)
        return logs_service_pb2.ExportLogsServiceResponse()


def _raw_unary(servicer_method: Any, response_serializer: Any) -> grpc.RpcMethodHandler:
    """A unary handler that receives the request as raw bytes: our decoder parses it once."""
    return grpc.unary_unary_rpc_method_handler(
        servicer_method,
        request_deserializer=lambda data: data,
        response_serializer=response_serializer,
    )


class GrpcReceiver:
    def __init__(
        self,
        ingestor: Ingestor,
        host: str,
        port: int,
        *,
        max_message_bytes: int = 16 * 1024 * 1024,
        tls: tuple[bytes, bytes] | None = None,
    ) -> None:
        self.ingestor = ingestor
        self.host = host
        self.port = port
        self.max_message_bytes = max_message_bytes
        self.tls = tls
        self.bound_port = port
        self._server: grpc.aio.Server | None = None
        self._health = health.aio.HealthServicer() if hasattr(health, "aio") else health.HealthServicer()

    async def start(self) -> None:
        server = grpc.aio.server(
            options=[
                ("grpc.max_receive_message_length", self.max_message_bytes),
                ("grpc.max_send_message_length", 4 * 1024 * 1024),
                ("grpc.so_reuseport", 0),
            ],
            compression=None,
        )
        traces = TraceServicer(self.ingestor)
        logs = LogsServicer(self.ingestor)
        server.add_generic_rpc_handlers(
            (
                grpc.method_handlers_generic_handler(
                    SERVICE_NAMES[0],
                    {
                        "Export": _raw_unary(
                            traces.Export, trace_service_pb2.ExportTraceServiceResponse.SerializeToString
                        )
                    },
                ),
                grpc.method_handlers_generic_handler(
                    SERVICE_NAMES[1],
                    {"Export": _raw_unary(logs.Export, logs_service_pb2.ExportLogsServiceResponse.SerializeToString)},
                ),
            )
        )
        health_pb2_grpc.add_HealthServicer_to_server(self._health, server)
        address = f"{self.host}:{self.port}"
        if self.tls:
            key, cert = self.tls
            self.bound_port = server.add_secure_port(address, grpc.ssl_server_credentials([(key, cert)]))
        else:
            self.bound_port = server.add_insecure_port(address)
        if not self.bound_port:
            raise OSError(f"cannot bind the OTLP/gRPC receiver to {address}")
        await server.start()
        self._server = server
        await self._set_health(health_pb2.HealthCheckResponse.SERVING)
        log.info("OTLP/gRPC receiver listening on %s:%d", self.host, self.bound_port)

    async def _set_health(self, status: int) -> None:
        for name in ("", *SERVICE_NAMES):
            result = self._health.set(name, status)
            if hasattr(result, "__await__"):
                await result

    async def shutdown(self, grace: float = 2.0) -> None:
        """Stop taking requests; in-flight calls get `grace` seconds. Idempotent."""
        server, self._server = self._server, None
        if server is None:
            return
        await self._set_health(health_pb2.HealthCheckResponse.NOT_SERVING)
        await server.stop(grace)
