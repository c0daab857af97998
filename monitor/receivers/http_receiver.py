"""OTLP/HTTP receiver: POST /v1/traces and /v1/logs, protobuf or JSON, optionally gzip-compressed; POST
/v1/metrics is accepted and dropped (`otlp_metrics`), as a Collector without a metrics pipeline would.

Answers as the OTLP/HTTP spec says: 200 with an Export*ServiceResponse (partial_success when
spans were dropped), 400 with a google.rpc.Status on malformed input, 401 without the bearer
token, 408 (and the connection closed) when the body does not arrive in time, 413 over the size
limit, 415 for an unknown content type or encoding, 503 with Retry-After when over the assembler's
limits or the in-flight byte budget. Bodies use the request's encoding.

Everything that can be decided from the headers (path, method, token, content type and encoding,
declared length, room in the in-flight budget) is decided before a byte of the body is read, and
`100 Continue` is sent only once those checks pass. The body's bytes are then reserved in the shared
in-flight budget as they arrive, never the declared length up front: a client that declares 16 MiB
and sends nothing holds nothing, and is cut after `read_idle_timeout` without a byte (or `read_timeout`
in all: both from the `receivers:` section). aiohttp (monitor/web/server.py) parses HTTP. The token is
checked by the receiver's `Authenticator`; answers and refusals are counted in the receiver's own
`ReceiverTelemetry`.
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
from prometheus_client import CollectorRegistry

from monitor.auth import Authenticator, BearerAuth
from monitor.config.receivers import ReceiversConfig
from monitor.consumer import Outcome, TraceConsumer, grpc_code_of_http, settled
from monitor.metrics.intake import IntakeMetrics, ReceiverTelemetry
from monitor.receivers.inflight import InflightBytes
from monitor.receivers.memory import MemoryReturner
from monitor.receivers.otlp_metrics import drop_metrics
from monitor.receivers.otlp_metrics import response as metrics_response
from monitor.web.server import WebServer

log = logging.getLogger(__name__)
RECEIVER = "http"
PROTOBUF = "application/x-protobuf"
JSON = "application/json"
TEXT = "text/plain; charset=utf-8"
SIGNALS = {"/v1/traces": "traces", "/v1/logs": "logs", "/v1/metrics": "metrics"}
THROTTLE_RETRY_SECONDS = 1


class DecompressionError(Exception):
    pass


class BodyTooLargeAfterDecompression(Exception):
    pass


class _BodyTooLarge(Exception):
    pass


class _OverBudget(Exception):
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


class _Body:
    """A request body read chunk by chunk, each chunk reserved in the in-flight budget as it arrives.

    `reserved` is what this request holds; the caller releases it when the request is answered."""

    def __init__(self, inflight: InflightBytes, limit: int, read_timeout: float, idle_timeout: float) -> None:
        self.inflight = inflight
        self.limit = limit
        self.read_timeout = read_timeout
        self.idle_timeout = idle_timeout
        self.reserved = 0
        self.size = 0  # the largest body held at once (for the memory returner)

    def reserve(self, size: int) -> None:
        """Hold `size` more bytes; _OverBudget when the in-flight budget cannot take them."""
        if not self.inflight.try_acquire(size, held=self.reserved):
            raise _OverBudget
        self.reserved += size
        self.size = max(self.size, self.reserved)

    def shrink_to(self, size: int) -> None:
        """Hold only `size` bytes (the earlier form of the body was dropped)."""
        if size < self.reserved:
            self.inflight.release(self.reserved - size)
        self.reserved = min(self.reserved, size)

    async def read(self, request: web.BaseRequest) -> bytes:
        """The whole body; _BodyTooLarge past `limit`, _OverBudget, TimeoutError (idle or in all)."""
        chunks: list[bytes] = []
        total = 0
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.read_timeout
        async with asyncio.timeout_at(min(deadline, loop.time() + self.idle_timeout)) as timer:
            while chunk := await request.content.readany():
                total += len(chunk)
                if total > self.limit:
                    raise _BodyTooLarge
                self.reserve(len(chunk))
                chunks.append(chunk)
                timer.reschedule(min(deadline, loop.time() + self.idle_timeout))
        return b"".join(chunks)


class OtlpHttpHandler:
    """The aiohttp low-level handler for every request on the OTLP/HTTP port."""

    def __init__(
        self,
        consumer: TraceConsumer,
        *,
        max_body_bytes: int,
        inflight: InflightBytes,
        auth: Authenticator,
        telemetry: ReceiverTelemetry,
        read_timeout: float,
        idle_timeout: float,
    ) -> None:
        self.consumer = consumer
        self.auth = auth
        self.telemetry = telemetry
        self.max_body_bytes = max_body_bytes
        self.inflight = inflight
        self.read_timeout = read_timeout
        self.idle_timeout = idle_timeout
        self.memory = MemoryReturner()
        self.reading = 0  # requests whose body is being read

    def _answer(self, response: web.Response) -> web.Response:
        self.telemetry.request(grpc_code_of_http(response.status))
        return response

    def _refuse(self, reason: str, response: web.Response) -> web.Response:
        self.telemetry.refused(reason)
        return self._answer(response)

    async def __call__(self, request: web.BaseRequest) -> web.StreamResponse:
        signal = SIGNALS.get(request.path)
        if signal is None:
            return self._answer(
                _response(404, "not found: OTLP/HTTP takes POST /v1/traces, /v1/logs and /v1/metrics\n")
            )
        if request.method != "POST":
            return self._answer(_response(405, "method not allowed\n", Allow="POST"))
        headers = request.headers
        encoding = _encoding_of(headers.get("Content-Type", ""))
        if not self.auth.authorized(headers.get("Authorization")):
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
        if declared is not None and not self.inflight.has_room(declared):
            return self._refuse("throttled", self._over_budget(encoding))
        body = _Body(self.inflight, self.max_body_bytes, self.read_timeout, self.idle_timeout)
        try:
            if headers.get("Expect", "").lower() == "100-continue" and request.version >= (1, 1):
                await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            return await self._receive(request, body, signal, encoding, content_encoding == "gzip")
        finally:
            self.inflight.release(body.reserved)
            self.memory.freed(body.size)

    @staticmethod
    def _over_budget(encoding: str) -> web.Response:
        message = "too many request bytes in flight; retry later"
        return _status_response(503, 14, message, encoding, **{"Retry-After": str(THROTTLE_RETRY_SECONDS)})

    async def _receive(
        self, request: web.BaseRequest, body: _Body, signal: str, encoding: str, gzipped: bool
    ) -> web.StreamResponse:
        self.reading += 1
        try:
            payload = await body.read(request)
        except _BodyTooLarge:
            return self._refuse("too_large", _response(413, "request body too large\n"))
        except _OverBudget:
            return self._refuse("throttled", self._over_budget(encoding))
        except TimeoutError:
            return await self._cut(request)
        except Exception as exc:  # a broken chunked encoding or a short body: aiohttp's payload errors
            return self._refuse("malformed", _status_response(400, 3, f"unreadable request body: {exc}", encoding))
        finally:
            self.reading -= 1
        if gzipped:
            try:
                payload = gunzip(payload, self.max_body_bytes)
                body.reserve(len(payload))  # the inflated body; the compressed one is dropped just below
                body.shrink_to(len(payload))
            except BodyTooLargeAfterDecompression:
                return self._refuse("too_large", _response(413, "request body too large after decompression\n"))
            except DecompressionError as exc:
                return self._refuse("malformed", _status_response(400, 3, str(exc), encoding))
            except _OverBudget:
                return self._refuse("throttled", self._over_budget(encoding))
        if signal == "metrics":
            outcome = drop_metrics(payload, encoding, self.telemetry.metric_points_dropped)
        else:
            outcome = await settled(self.consumer.ingest(payload, receiver=RECEIVER, encoding=encoding, signal=signal))
        self.telemetry.ingested(outcome)
        if outcome.outcome is Outcome.MALFORMED:
            return self._answer(_status_response(400, 3, outcome.message, encoding))
        if outcome.outcome is Outcome.THROTTLED:
            retry = str(max(THROTTLE_RETRY_SECONDS, math.ceil(outcome.retry_after_seconds)))
            return self._answer(_status_response(503, 14, outcome.message, encoding, **{"Retry-After": retry}))
        return self._answer(self._success(signal, encoding, outcome.rejected, outcome.message))

    async def _cut(self, request: web.BaseRequest) -> web.StreamResponse:
        """408 for a body that did not arrive in time, and the connection closed (not drained: the client
        stalls, so draining would only keep it open)."""
        response = self._refuse("timeout", _response(408, "request body not received in time\n", Connection="close"))
        try:
            await response.prepare(request)
            await response.write_eof()
        except ConnectionError:
            pass
        finally:
            if request.protocol is not None:
                request.protocol.force_close()
        return response

    @staticmethod
    def _success(signal: str, encoding: str, rejected: int, message: str) -> web.Response:
        if signal == "logs":
            answer: Message = ExportLogsServiceResponse()
        elif signal == "metrics":
            answer = metrics_response()
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
    """The OTLP/HTTP receiver of the `receivers:` section: its `http` subsection (host, port, body size) and the
    receivers' shared `read_timeout` and `read_idle_timeout`; every default is the config's. `auth`: open to all
    when not given; `telemetry`: this receiver's counters (on a registry of its own when not given); `inflight`:
    the byte budget shared with the other receiver (one of its own, of `max_inflight_bytes`, when not given);
    `ssl_context`: serve over TLS."""

    def __init__(
        self,
        config: ReceiversConfig,
        consumer: TraceConsumer,
        *,
        auth: Authenticator | None = None,
        telemetry: ReceiverTelemetry | None = None,
        inflight: InflightBytes | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        section = config.http
        self.handler = OtlpHttpHandler(
            consumer,
            max_body_bytes=section.max_body_bytes,
            inflight=inflight or InflightBytes(config.max_inflight_bytes),
            auth=auth or BearerAuth(),
            telemetry=telemetry or IntakeMetrics(CollectorRegistry()).receiver(RECEIVER),
            read_timeout=config.read_timeout,
            idle_timeout=config.read_idle_timeout,
        )
        # auto_decompress off: gzip is inflated by our own bounded gunzip, never by the parser.
        self.server = WebServer(
            self.handler,
            section.host,
            section.port,
            name="otlp-http",
            ssl_context=ssl_context,
            header_timeout=section.header_timeout,
            auto_decompress=False,
        )

    @property
    def bound_port(self) -> int:
        return self.server.bound_port

    async def start(self) -> None:
        await self.server.start()
        log.info("OTLP/HTTP receiver listening on %s:%d", self.server.host, self.bound_port)

    async def shutdown(self, grace: float) -> None:
        await self.server.shutdown(grace)
