"""SourceHttp: the HTTP client every HTTP source uses (aiohttp): base URL, headers and bearer token from the
config (never logged), TLS options, a timeout per request, retries with exponential backoff and jitter on 5xx,
429, timeouts and refused connections, and a SourceError with a clear message otherwise (4xx at once)."""

from __future__ import annotations

import asyncio
import json
import random
import ssl
from collections.abc import Mapping, Sequence
from typing import Any

import aiohttp

from monitor.config.sources import HttpSourceConfig, SourceTlsConfig
from monitor.sources.base import SourceError
from monitor.sources.guard import RunGuard

Params = Mapping[str, str | int | float] | Sequence[tuple[str, str | int | float]]
RETRIED_STATUSES = frozenset({429, 500, 502, 503, 504})
MAX_BODY_BYTES = 256 * 1024 * 1024  # one response
MAX_BACKOFF_SECONDS = 60.0


def ssl_context(tls: SourceTlsConfig) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=tls.ca_file)
    if tls.cert_file is not None and tls.key_file is not None:
        context.load_cert_chain(tls.cert_file, tls.key_file)
    if tls.insecure_skip_verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


class SourceHttp:
    def __init__(self, config: HttpSourceConfig, *, sleep: Any = asyncio.sleep) -> None:
        """ValueError when the token's variable or file is missing, or a TLS file cannot be read."""
        self.config = config
        self.base = config.url.rstrip("/")
        headers = dict(config.headers)
        token = config.bearer_token()
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        self._headers = headers
        try:
            self._ssl: ssl.SSLContext | bool = ssl_context(config.tls) if config.url.startswith("https") else False
        except (OSError, ssl.SSLError) as exc:
            raise ValueError(f"sources.{config.name}.tls: {exc}") from None
        self._session: aiohttp.ClientSession | None = None
        self._sleep = sleep
        self.requests = 0  # every attempt (tests, debugging)

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                headers=self._headers,
                timeout=aiohttp.ClientTimeout(total=self.config.timeout),
                connector=aiohttp.TCPConnector(ssl=self._ssl, limit=8),
                raise_for_status=False,
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def get_json(
        self, path: str, params: Params = (), *, accept: str = "application/json", guard: RunGuard | None = None
    ) -> Any:
        body = await self.request("GET", path, params, accept=accept, guard=guard)
        return _json(body, self._describe("GET", path))

    async def get_bytes(
        self, path: str, params: Params = (), *, accept: str = "*/*", guard: RunGuard | None = None
    ) -> bytes:
        return await self.request("GET", path, params, accept=accept, guard=guard)

    async def post_json(self, path: str, document: Any, params: Params = ()) -> Any:
        body = await self.request("POST", path, params, json_body=document)
        return _json(body, self._describe("POST", path)) if body.strip() else None

    async def request(
        self,
        method: str,
        path: str,
        params: Params = (),
        *,
        accept: str = "application/json",
        json_body: Any = None,
        guard: RunGuard | None = None,
    ) -> bytes:
        """The response body of a 2xx; retried on RETRIED_STATUSES, timeouts and connection errors. `guard`:
        the run's byte budget, which the body is read against (SourceError "byte_limit" past it)."""
        what = self._describe(method, path)
        attempt = 0
        while True:
            self.requests += 1
            try:
                async with self._client().request(
                    method, self.base + path, params=params, json=json_body, headers={"Accept": accept}
                ) as response:
                    if 200 <= response.status < 300:
                        return await _whole_body(response, what, guard)
                    text = (await response.content.read(500)).decode("utf-8", "replace").strip()
                    status = response.status
            except TimeoutError:
                failure: SourceError = SourceError("timeout", f"{what}: no answer within {self.config.timeout:g} s")
            except aiohttp.ClientConnectionError as exc:
                failure = SourceError("connection", f"{what}: {type(exc).__name__}: {exc}")
            except aiohttp.ClientError as exc:
                failure = SourceError("server", f"{what}: {type(exc).__name__}: {exc}")
            else:
                failure = _status_error(status, text, what, self.config.name)
                if status not in RETRIED_STATUSES:
                    raise failure
            if attempt >= self.config.retries:
                raise failure
            delay = min(self.config.backoff * 2**attempt, MAX_BACKOFF_SECONDS)
            await self._sleep(delay * random.uniform(0.5, 1.0))
            attempt += 1

    def _describe(self, method: str, path: str) -> str:
        return f"{method} {self.base}{path}"


async def _whole_body(response: aiohttp.ClientResponse, what: str, guard: RunGuard | None) -> bytes:
    """The body to its end (StreamReader.read(n) stops at what has arrived so far), at most MAX_BODY_BYTES and
    what the run's guard has left: reading stops at the bound, not after the whole answer is in memory."""
    if guard is not None:
        guard.expect(response.content_length or 0, what)  # over the run's budget: refused before it is read
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_chunked(1 << 16):
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise SourceError("decode", f"{what}: the response is larger than {MAX_BODY_BYTES} bytes")
        if guard is not None:
            guard.read(len(chunk), what)
        chunks.append(chunk)
    return b"".join(chunks)


class HttpSource:
    """What every HTTP source shares: its config, its name (the metrics' `source`) and its SourceHttp (`http`:
    one given by a test)."""

    ordered = True  # pages come in ascending start time (base.py)

    def __init__(self, config: HttpSourceConfig, *, http: SourceHttp | None = None) -> None:
        self.name = config.name
        self.http = http if http is not None else SourceHttp(config)

    async def close(self) -> None:
        await self.http.close()


def _status_error(status: int, text: str, what: str, name: str) -> SourceError:
    detail = f": {text[:200]}" if text else ""
    if status in (401, 403):
        hint = "check the source's token (token, token_env or token_file) and headers"
        return SourceError(
            "auth", f"{what}: {status} {'Unauthorized' if status == 401 else 'Forbidden'}{detail} ({hint})"
        )
    if status >= 500 or status == 429:
        return SourceError("server", f"{what}: {status}{detail}")
    return SourceError("client", f"{what}: {status}{detail} (sources.{name}: check its url and parameters)")


def _json(body: bytes, what: str) -> Any:
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise SourceError("decode", f"{what}: the response is not JSON: {exc}") from None
