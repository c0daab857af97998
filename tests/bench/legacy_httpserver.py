"""BENCH BASELINE ONLY: the hand-written HTTP/1.1 server and OTLP/HTTP handler agent-monitor used before aiohttp.

Kept verbatim (issue 8) so `make bench` can compare the aiohttp receiver against it in the same run
(tests/bench/bench_http_ingest.py). The daemon never uses this; nothing under monitor/ may import it.
It reads a whole body before checking the token — the very defect the replacement fixes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from http import HTTPStatus

from google.protobuf import json_format
from google.rpc import status_pb2
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from monitor.auth import BearerAuth
from monitor.consumer import Outcome
from monitor.engine.ingest import Ingestor
from monitor.metrics.intake import ReceiverTelemetry
from monitor.receivers.http_receiver import BodyTooLargeAfterDecompression, DecompressionError, _encoding_of, gunzip

log = logging.getLogger(__name__)

MAX_HEADER_BYTES = 16 * 1024
MAX_HEADERS = 100
IDLE_TIMEOUT = 75.0
READ_TIMEOUT = 30.0


@dataclass(slots=True)
class Request:
    method: str
    path: str
    query: str
    headers: dict[str, str]  # lower-case names
    body: bytes
    peer: str = ""


@dataclass(slots=True)
class Response:
    status: int
    body: bytes = b""
    content_type: str = "text/plain; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)


Handler = Callable[[Request], Awaitable[Response]]


class BodyTooLarge(Exception):
    pass


class BadRequest(Exception):
    pass


class HTTPServer:
    def __init__(
        self,
        handler: Handler,
        host: str,
        port: int,
        *,
        max_body_bytes: int = 16 * 1024 * 1024,
        ssl_context: ssl.SSLContext | None = None,
        name: str = "http",
        on_body_too_large: Callable[[], None] | None = None,
    ) -> None:
        self.handler = handler
        self.host = host
        self.port = port
        self.max_body_bytes = max_body_bytes
        self.ssl_context = ssl_context
        self.name = name
        self.on_body_too_large = on_body_too_large
        self._server: asyncio.base_events.Server | None = None
        self._connections: set[asyncio.Task] = set()

    @property
    def bound_port(self) -> int:
        if self._server is None or not self._server.sockets:
            return self.port
        return self._server.sockets[0].getsockname()[1]

    async def start(self) -> None:
        self._server = await asyncio.start_server(
            self._serve, self.host, self.port, ssl=self.ssl_context, limit=MAX_HEADER_BYTES, reuse_address=True
        )

    async def shutdown(self, grace: float = 1.0) -> None:
        """Stop accepting; let in-flight requests finish for up to `grace` seconds. Idempotent."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
        if self._connections:
            _, waiting = await asyncio.wait(list(self._connections), timeout=grace)
            for task in waiting:
                task.cancel()
        if server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), timeout=grace)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._connections.add(task)
        peer = writer.get_extra_info("peername")
        try:
            while True:
                keep_alive = await self._one_request(reader, writer, str(peer[0]) if peer else "")
                if not keep_alive or self._server is None:
                    break
        except (ConnectionError, asyncio.IncompleteReadError, TimeoutError, ssl.SSLError):
            pass
        except Exception:  # never let one connection take the server down
            log.exception("%s server: unexpected error on a connection", self.name)
        finally:
            if task is not None:
                self._connections.discard(task)
            with contextlib.suppress(Exception):
                writer.close()
                await asyncio.wait_for(writer.wait_closed(), timeout=1.0)

    async def _one_request(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: str) -> bool:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=IDLE_TIMEOUT)
        except asyncio.IncompleteReadError:
            return False
        except asyncio.LimitOverrunError:
            await self._write(writer, Response(431, b"request header too large\n"), close=True)
            return False
        try:
            method, target, version, headers = _parse_head(head)
        except BadRequest as exc:
            await self._write(writer, Response(400, f"{exc}\n".encode()), close=True)
            return False
        path, _, query = target.partition("?")
        keep_alive = _keep_alive(version, headers)
        if headers.get("expect", "").lower() == "100-continue":
            writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        try:
            body = await asyncio.wait_for(self._read_body(reader, headers), timeout=READ_TIMEOUT)
        except BodyTooLarge:
            if self.on_body_too_large is not None:
                self.on_body_too_large()
            await self._write(writer, Response(413, b"request body too large\n"), close=True)
            return False
        except BadRequest as exc:
            await self._write(writer, Response(400, f"{exc}\n".encode()), close=True)
            return False
        try:
            response = await self.handler(Request(method, path, query, headers, body, peer))
        except Exception:
            log.exception("%s server: handler failed for %s %s", self.name, method, path[:100])
            response = Response(500, b"internal error\n")
        await self._write(writer, response, close=not keep_alive, head_only=method == "HEAD")
        return keep_alive

    async def _read_body(self, reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
        if "chunked" in headers.get("transfer-encoding", "").lower():
            return await self._read_chunked(reader)
        raw_length = headers.get("content-length", "0").strip() or "0"
        if not raw_length.isdigit():
            raise BadRequest("invalid Content-Length")
        length = int(raw_length)
        if length > self.max_body_bytes:
            raise BodyTooLarge
        return await reader.readexactly(length) if length else b""

    async def _read_chunked(self, reader: asyncio.StreamReader) -> bytes:
        parts: list[bytes] = []
        total = 0
        while True:
            line = await reader.readuntil(b"\r\n")
            size_text = line.split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise BadRequest("invalid chunk size") from None
            if size == 0:
                while (await reader.readuntil(b"\r\n")) != b"\r\n":
                    pass  # trailers
                return b"".join(parts)
            total += size
            if total > self.max_body_bytes:
                raise BodyTooLarge
            parts.append(await reader.readexactly(size))
            await reader.readexactly(2)

    async def _write(
        self, writer: asyncio.StreamWriter, response: Response, *, close: bool, head_only: bool = False
    ) -> None:
        reason = HTTPStatus(response.status).phrase if response.status in HTTPStatus._value2member_map_ else ""
        lines = [
            f"HTTP/1.1 {response.status} {reason}",
            f"Content-Type: {response.content_type}",
            f"Content-Length: {len(response.body)}",
        ]
        lines += [f"{k}: {v}" for k, v in response.headers.items()]
        if close:
            lines.append("Connection: close")
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        if not head_only:
            writer.write(response.body)
        await writer.drain()


def _parse_head(head: bytes) -> tuple[str, str, str, dict[str, str]]:
    try:
        text = head.decode("latin-1")
    except UnicodeDecodeError:  # pragma: no cover - latin-1 decodes every byte
        raise BadRequest("undecodable request head") from None
    lines = text.split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise BadRequest("malformed request line")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip():
            raise BadRequest("malformed header line")
        headers[name.lower()] = value.strip()
        if len(headers) > MAX_HEADERS:
            raise BadRequest("too many headers")
    return parts[0].upper(), parts[1], parts[2], headers


def _keep_alive(version: str, headers: dict[str, str]) -> bool:
    connection = headers.get("connection", "").lower()
    if version == "HTTP/1.0":
        return connection == "keep-alive"
    return connection != "close"


# --- the OTLP/HTTP handler of that time, on the server above -----------------------------------

RECEIVER = "http"
PROTOBUF = "application/x-protobuf"
JSON = "application/json"
SIGNALS = {"/v1/traces": "traces", "/v1/logs": "logs"}


def _status_body(code: int, message: str, encoding: str) -> tuple[bytes, str]:
    status = status_pb2.Status(code=code, message=message)
    if encoding == "json":
        return json_format.MessageToJson(status, indent=None).encode(), JSON
    return status.SerializeToString(), PROTOBUF


class OtlpHttpHandler:
    def __init__(self, ingestor: Ingestor, max_body_bytes: int, auth: BearerAuth, telemetry: ReceiverTelemetry) -> None:
        self.ingestor = ingestor
        self.max_body_bytes = max_body_bytes
        self.auth = auth
        self.telemetry = telemetry

    def _answer(self, code: int, response: Response) -> Response:
        self.telemetry.request(str(code))
        return response

    async def __call__(self, request: Request) -> Response:
        signal = SIGNALS.get(request.path)
        if signal is None:
            return self._answer(404, Response(404, b"not found: OTLP/HTTP takes POST /v1/traces and /v1/logs\n"))
        if request.method != "POST":
            return self._answer(405, Response(405, b"method not allowed\n", headers={"Allow": "POST"}))
        encoding = _encoding_of(request.headers.get("content-type", ""))
        if not self.auth.authorized(request.headers.get("authorization")):
            self.telemetry.refused("unauthenticated")
            body, content_type = _status_body(16, "missing or invalid bearer token", encoding or "protobuf")
            return self._answer(
                401, Response(401, body, content_type, headers={"WWW-Authenticate": 'Bearer realm="otlp"'})
            )
        if encoding is None:
            self.telemetry.refused("malformed")
            body = b"unsupported content type: use application/x-protobuf or application/json\n"
            return self._answer(415, Response(415, body))
        payload = request.body
        content_encoding = request.headers.get("content-encoding", "identity").strip().lower()
        if content_encoding == "gzip":
            try:
                payload = gunzip(payload, self.max_body_bytes)
            except BodyTooLargeAfterDecompression:
                self.telemetry.refused("too_large")
                return self._answer(413, Response(413, b"request body too large after decompression\n"))
            except DecompressionError as exc:
                self.telemetry.refused("malformed")
                body, content_type = _status_body(3, str(exc), encoding)
                return self._answer(400, Response(400, body, content_type))
        elif content_encoding not in ("identity", ""):
            self.telemetry.refused("malformed")
            return self._answer(415, Response(415, b"unsupported Content-Encoding: use gzip or none\n"))
        outcome = self.ingestor.ingest(payload, receiver=RECEIVER, encoding=encoding, signal=signal)
        self.telemetry.ingested(outcome)
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
