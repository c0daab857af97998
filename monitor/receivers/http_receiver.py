"""OTLP/HTTP receiver: POST /v1/traces and /v1/logs, protobuf or JSON, optionally gzip-compressed.

Answers as the OTLP/HTTP spec says: 200 with an Export*ServiceResponse (partial_success when
spans were dropped), 400 with a google.rpc.Status on malformed input, 401 without the bearer
token, 413 over the size limit, 415 for an unknown content type or encoding, 503 with
Retry-After when over the pending-span limit or the in-flight byte budget. Bodies use the
request's encoding.

Everything that can be decided from the headers (path, method, token, content type and encoding,
declared length, in-flight budget) is decided before a byte of the body is read, and
`100 Continue` is sent only once those checks pass. aiohttp (monitor/web/server.py) parses HTTP.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import ssl
import zlib

from aiohttp import web
from google.protobuf import json_format
from google.protobuf.message import Message
from google.rpc import status_pb2
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from monitor.consumer import Outcome, TraceConsumer, grpc_code_of_http
from monitor.receivers.inflight import InflightBytes
from monitor.receivers.memory import MemoryReturner
from monitor.web.server import WebServer

log = logging.getLogger(__name__)
RECEIVER = "http"
PROTOBUF = "application/x-protobuf"
JSON = "application/json"
TEXT = "text/plain; charset=utf-8"
SIGNALS = {"/v1/traces": "traces", "/v1/logs": "logs"}
READ_TIMEOUT = 30.0  # a body must arrive within this long once its headers are in
THROTTLE_RETRY_SECONDS = 1


class DecompressionError(Exception):
    pass


class BodyTooLargeAfterDecompression(Exception):
    pass


class _BodyTooLarge(Exception):
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


def _response(status: int, body: bytes | str, content_type: str = TEXT, **headers: str) -> web.Response:
    data = body.encode() if isinstance(body, str) else body
    return web.Response(status=status, body=data, headers={"Content-Type": content_type, **headers})


def _status_response(status: int, code: int, message: str, encoding: str, **headers: str) -> web.Response:
    """An error answer whose body is a google.rpc.Status in the request's encoding."""
    message_obj = status_pb2.Status(code=code, message=message)
    if encoding == "json":
        return _response(status, json_format.MessageToJson(message_obj, indent=None), JSON, **headers)
    return _response(status, message_obj.SerializeToString(), PROTOBUF, **headers)


async def _read_body(request: web.BaseRequest, limit: int) -> bytes:
    """The whole body, refusing (without holding) more than `limit` bytes; within READ_TIMEOUT."""
    chunks: list[bytes] = []
    total = 0
    async with asyncio.timeout(READ_TIMEOUT):
        while chunk := await request.content.readany():
            total += len(chunk)
            if total > limit:
                raise _BodyTooLarge
            chunks.append(chunk)
    return b"".join(chunks)


class OtlpHttpHandler:
    """The aiohttp low-level handler for every request on the OTLP/HTTP port."""

    def __init__(self, consumer: TraceConsumer, max_body_bytes: int, inflight: InflightBytes | None = None) -> None:
        self.consumer = consumer
        self.max_body_bytes = max_body_bytes
        self.inflight = inflight
        self.memory = MemoryReturner()

    def _answer(self, response: web.Response) -> web.Response:
        self.consumer.count_request(RECEIVER, grpc_code_of_http(response.status))
        return response

    def _refuse(self, reason: str, response: web.Response) -> web.Response:
        self.consumer.refuse(RECEIVER, reason)
        return self._answer(response)

    async def __call__(self, request: web.BaseRequest) -> web.StreamResponse:
        signal = SIGNALS.get(request.path)
        if signal is None:
            return self._answer(_response(404, "not found: OTLP/HTTP takes POST /v1/traces and /v1/logs\n"))
        if request.method != "POST":
            return self._answer(_response(405, "method not allowed\n", Allow="POST"))
        headers = request.headers
        encoding = _encoding_of(headers.get("Content-Type", ""))
        if not self.consumer.authorized(headers.get("Authorization")):
            auth = {"WWW-Authenticate": 'Bearer realm="otlp"'}
            refusal = _status_response(401, 16, "missing or invalid bearer token", encoding or "protobuf", **auth)
            return self._refuse("unauthenticated", refusal)
        if encoding is None:
            hint = "unsupported content type: use application/x-protobuf or application/json\n"
            return self._refuse("malformed", _response(415, hint))
        content_encoding = headers.get("Content-Encoding", "identity").strip().lower()
        if content_encoding not in ("gzip", "identity", ""):
            return self._refuse("malformed", _response(415, "unsupported Content-Encoding: use gzip or none\n"))
        declared = request.content_length
        if declared is not None and declared > self.max_body_bytes:
            return self._refuse("too_large", _response(413, "request body too large\n"))
        reserved = declared if declared is not None else self.max_body_bytes
        if self.inflight is not None and not self.inflight.try_acquire(reserved):
            refusal = _status_response(
                503, 14, "too many request bytes in flight; retry later", encoding, **{"Retry-After": "1"}
            )
            return self._refuse("throttled", refusal)
        try:
            if headers.get("Expect", "").lower() == "100-continue" and request.version >= (1, 1):
                await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            return await self._receive(request, signal, encoding, content_encoding == "gzip")
        finally:
            if self.inflight is not None:
                self.inflight.release(reserved)
            self.memory.freed(reserved)

    async def _receive(self, request: web.BaseRequest, signal: str, encoding: str, gzipped: bool) -> web.Response:
        try:
            payload = await _read_body(request, self.max_body_bytes)
        except _BodyTooLarge:
            return self._refuse("too_large", _response(413, "request body too large\n"))
        except TimeoutError:
            return self._refuse("malformed", _response(408, "request body not received in time\n"))
        except Exception as exc:  # a broken chunked encoding or a short body: aiohttp's payload errors
            return self._refuse("malformed", _status_response(400, 3, f"unreadable request body: {exc}", encoding))
        if gzipped:
            try:
                payload = gunzip(payload, self.max_body_bytes)
            except BodyTooLargeAfterDecompression:
                return self._refuse("too_large", _response(413, "request body too large after decompression\n"))
            except DecompressionError as exc:
                return self._refuse("malformed", _status_response(400, 3, str(exc), encoding))
        outcome = self.consumer.ingest(payload, receiver=RECEIVER, encoding=encoding, signal=signal)
        if outcome.outcome is Outcome.MALFORMED:
            return self._answer(_status_response(400, 3, outcome.message, encoding))
        if outcome.outcome is Outcome.THROTTLED:
            retry = str(max(THROTTLE_RETRY_SECONDS, math.ceil(outcome.retry_after_seconds)))
            return self._answer(_status_response(503, 14, outcome.message, encoding, **{"Retry-After": retry}))
        return self._answer(self._success(signal, encoding, outcome.rejected, outcome.message))

    @staticmethod
    def _success(signal: str, encoding: str, rejected: int, message: str) -> web.Response:
        if signal == "logs":
            answer: Message = ExportLogsServiceResponse()
        else:
            traces = ExportTraceServiceResponse()
            if rejected:
                traces.partial_success.rejected_spans = rejected
                traces.partial_success.error_message = message
            answer = traces
        if encoding == "json":
            return _response(200, json.dumps(json_format.MessageToDict(answer)), JSON)
        return _response(200, answer.SerializeToString(), PROTOBUF)


class HttpReceiver:
    def __init__(
        self,
        consumer: TraceConsumer,
        host: str,
        port: int,
        *,
        max_body_bytes: int = 16 * 1024 * 1024,
        ssl_context: ssl.SSLContext | None = None,
        inflight: InflightBytes | None = None,
    ) -> None:
        self.handler = OtlpHttpHandler(consumer, max_body_bytes, inflight)
        # auto_decompress off: gzip is inflated by our own bounded gunzip, never by the parser.
        self.server = WebServer(
            self.handler, host, port, name="otlp-http", ssl_context=ssl_context, auto_decompress=False
        )

    @property
    def bound_port(self) -> int:
        return self.server.bound_port

    async def start(self) -> None:
        await self.server.start()
        log.info("OTLP/HTTP receiver listening on %s:%d", self.server.host, self.bound_port)

    async def shutdown(self, grace: float = 2.0) -> None:
        await self.server.shutdown(grace)
