"""OTLP/HTTP receiver: POST /v1/traces and /v1/logs, protobuf or JSON, optionally gzip-compressed.

Answers as the OTLP/HTTP spec says: 200 with an Export*ServiceResponse (partial_success when
spans were dropped), 400 with a google.rpc.Status on malformed input, 401 without the bearer
token, 413 over the size limit, 415 for an unknown content type or encoding, 503 with
Retry-After when over the pending-span limit. Bodies use the request's encoding.
"""

from __future__ import annotations

import json
import logging
import math
import ssl
import zlib

from google.protobuf import json_format
from google.rpc import status_pb2
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from ..httpserver import HTTPServer, Request, Response
from ..ingest import Ingestor, Outcome

log = logging.getLogger(__name__)
RECEIVER = "http"
PROTOBUF = "application/x-protobuf"
JSON = "application/json"
SIGNALS = {"/v1/traces": "traces", "/v1/logs": "logs"}


class DecompressionError(Exception):
    pass


class BodyTooLargeAfterDecompression(Exception):
    pass


def gunzip(body: bytes, limit: int) -> bytes:
    """Decompress gzip with a cap on the output size (no decompression bombs)."""
    decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        data = decompressor.decompress(body, limit + 1)
    except zlib.error as exc:
        raise DecompressionError(f"invalid gzip body: {exc}") from None
    if len(data) > limit or decompressor.unconsumed_tail:
        raise BodyTooLargeAfterDecompression
    if not decompressor.eof:
        raise DecompressionError("truncated gzip body")
    return data


def _encoding_of(content_type: str) -> str | None:
    media = content_type.split(";", 1)[0].strip().lower()
    if media == PROTOBUF:
        return "protobuf"
    if media == JSON:
        return "json"
    return None


def _status_body(code: int, message: str, encoding: str) -> tuple[bytes, str]:
    status = status_pb2.Status(code=code, message=message)
    if encoding == "json":
        return json_format.MessageToJson(status, indent=None).encode(), JSON
    return status.SerializeToString(), PROTOBUF


class OtlpHttpHandler:
    def __init__(self, ingestor: Ingestor, max_body_bytes: int) -> None:
        self.ingestor = ingestor
        self.max_body_bytes = max_body_bytes

    def _answer(self, code: int, response: Response) -> Response:
        self.ingestor.count_request(RECEIVER, str(code))
        return response

    async def __call__(self, request: Request) -> Response:
        signal = SIGNALS.get(request.path)
        if signal is None:
            return self._answer(404, Response(404, b"not found: OTLP/HTTP takes POST /v1/traces and /v1/logs\n"))
        if request.method != "POST":
            return self._answer(405, Response(405, b"method not allowed\n", headers={"Allow": "POST"}))
        encoding = _encoding_of(request.headers.get("content-type", ""))
        if not self.ingestor.authorized(request.headers.get("authorization")):
            self.ingestor.refuse(RECEIVER, "unauthenticated")
            body, content_type = _status_body(16, "missing or invalid bearer token", encoding or "protobuf")
            return self._answer(
                401, Response(401, body, content_type, headers={"WWW-Authenticate": 'Bearer realm="otlp"'})
            )
        if encoding is None:
            self.ingestor.refuse(RECEIVER, "malformed")
            body = b"unsupported content type: use application/x-protobuf or application/json\n"
            return self._answer(415, Response(415, body))
        payload = request.body
        content_encoding = request.headers.get("content-encoding", "identity").strip().lower()
        if content_encoding == "gzip":
            try:
                payload = gunzip(payload, self.max_body_bytes)
            except BodyTooLargeAfterDecompression:
                self.ingestor.refuse(RECEIVER, "too_large")
                return self._answer(413, Response(413, b"request body too large after decompression\n"))
            except DecompressionError as exc:
                self.ingestor.refuse(RECEIVER, "malformed")
                body, content_type = _status_body(3, str(exc), encoding)
                return self._answer(400, Response(400, body, content_type))
        elif content_encoding not in ("identity", ""):
            self.ingestor.refuse(RECEIVER, "malformed")
            return self._answer(415, Response(415, b"unsupported Content-Encoding: use gzip or none\n"))
        outcome = self.ingestor.ingest(payload, receiver=RECEIVER, encoding=encoding, signal=signal)
        if outcome.outcome is Outcome.MALFORMED:
            body, content_type = _status_body(3, outcome.message, encoding)
            return self._answer(400, Response(400, body, content_type))
        if outcome.outcome is Outcome.THROTTLED:
            body, content_type = _status_body(14, outcome.message, encoding)
            headers = {"Retry-After": str(max(1, math.ceil(outcome.retry_after_seconds)))}
            return self._answer(503, Response(503, body, content_type, headers=headers))
        return self._answer(200, self._success(signal, encoding, outcome.rejected, outcome.message))

    @staticmethod
    def _success(signal: str, encoding: str, rejected: int, message: str) -> Response:
        if signal == "logs":
            message_obj = ExportLogsServiceResponse()
        else:
            message_obj = ExportTraceServiceResponse()
            if rejected:
                message_obj.partial_success.rejected_spans = rejected
                message_obj.partial_success.error_message = message
        if encoding == "json":
            return Response(200, json.dumps(json_format.MessageToDict(message_obj)).encode(), JSON)
        return Response(200, message_obj.SerializeToString(), PROTOBUF)


class HttpReceiver:
    def __init__(
        self,
        ingestor: Ingestor,
        host: str,
        port: int,
        *,
        max_body_bytes: int = 16 * 1024 * 1024,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        def too_large() -> None:
            ingestor.refuse(RECEIVER, "too_large")
            ingestor.count_request(RECEIVER, "413")

        self.server = HTTPServer(
            OtlpHttpHandler(ingestor, max_body_bytes),
            host,
            port,
            max_body_bytes=max_body_bytes,
            ssl_context=ssl_context,
            name="otlp-http",
            on_body_too_large=too_large,
        )

    @property
    def bound_port(self) -> int:
        return self.server.bound_port

    async def start(self) -> None:
        await self.server.start()
        log.info("OTLP/HTTP receiver listening on %s:%d", self.server.host, self.bound_port)

    async def shutdown(self, grace: float = 2.0) -> None:
        await self.server.shutdown(grace)
