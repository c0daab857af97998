"""One aiohttp listener in the daemon's event loop: start, bound port, quiet graceful shutdown.

Serves either an `aiohttp.web.Application` (the metrics/API port) or a low-level request handler
(the OTLP/HTTP receiver, which checks a request before reading its body). HTTP parsing, keep-alive,
chunked bodies, header limits and lingering close (a refused body is drained for a while so the
client reads the answer instead of a reset) are aiohttp's.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from monitor.logutil import RateLimitedLogger
from monitor.web.header_timeout import HeaderTimeoutAppRunner, HeaderTimeoutServer, OnTimeout

log = logging.getLogger(__name__)

LowLevelHandler = Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]

KEEPALIVE_TIMEOUT = 75.0  # idle keep-alive connections are closed after this long
LINGERING_TIME = 10.0  # how long a refused request body is drained before the connection closes
MAX_LINE_BYTES = 8190
MAX_FIELD_BYTES = 8190
MAX_HEADERS = 100


class _ServerLog:
    """aiohttp's server logger: malformed requests are one rate-limited warning line, not an ERROR traceback.

    Anyone can send garbage to a port bound to 0.0.0.0; that is not a server error and must not flood the
    log. Real exceptions (a bug in a handler) keep their traceback."""

    def __init__(self, name: str) -> None:
        self._log = logging.getLogger(f"monitor.web.{name}")
        self._limited = RateLimitedLogger(self._log, per_minute=10)
        self.name = name

    def exception(self, message: str, *args: Any, exc_info: Any = None, **_: Any) -> None:
        if isinstance(exc_info, HttpProcessingError):
            text = str(exc_info).splitlines()[0][:200] if str(exc_info) else type(exc_info).__name__
            self._limited.warning("bad_request", "%s: malformed HTTP request refused: %s", self.name, text)
            return
        self._log.error(message, *args, exc_info=exc_info or True)

    def header_timed_out(self, seconds: float) -> None:
        self._limited.warning(
            "header_timeout", "%s: a request's headers took longer than %gs: connection closed", self.name, seconds
        )

    def debug(self, *args: Any, **kw: Any) -> None:
        self._log.debug(*args, **kw)

    def warning(self, *args: Any, **kw: Any) -> None:
        self._log.warning(*args, **kw)

    def isEnabledFor(self, level: int) -> bool:  # the logging.Logger method name
        return self._log.isEnabledFor(level)


class WebServer:
    """`start()` binds, `shutdown(grace)` stops accepting, lets requests in flight finish for `grace`
    seconds and closes idle keep-alive connections without a traceback. Idempotent. With `header_timeout`, a
    request whose line and headers take longer than that from its first byte is cut (monitor/web/header_timeout.py),
    and `on_header_timeout` called."""

    def __init__(
        self,
        target: web.Application | LowLevelHandler,
        host: str,
        port: int,
        *,
        name: str,
        ssl_context: ssl.SSLContext | None = None,
        header_timeout: float | None = None,
        on_header_timeout: OnTimeout | None = None,
        **handler_args: Any,
    ) -> None:
        self.host = host
        self.port = port
        self.name = name
        self.ssl_context = ssl_context
        self._target = target
        server_log = _ServerLog(name)
        self._header_timeout = header_timeout
        self._on_header_timeout = on_header_timeout or (lambda: server_log.header_timed_out(header_timeout or 0))
        self._handler_args: dict[str, Any] = {
            "access_log": None,
            "keepalive_timeout": KEEPALIVE_TIMEOUT,
            "lingering_time": LINGERING_TIME,
            "max_line_size": MAX_LINE_BYTES,
            "max_field_size": MAX_FIELD_BYTES,
            "max_headers": MAX_HEADERS,
            "logger": server_log,
            **handler_args,
        }
        self._runner: web.BaseRunner | None = None
        self._bound_port: int | None = None

    @property
    def bound_port(self) -> int:
        return self._bound_port if self._bound_port is not None else self.port

    async def start(self) -> None:
        runner: web.BaseRunner
        timeout, on_timeout = self._header_timeout, self._on_header_timeout
        if isinstance(self._target, web.Application):
            if timeout is None:
                runner = web.AppRunner(self._target, **self._handler_args)
            else:
                runner = HeaderTimeoutAppRunner(
                    self._target, header_timeout=timeout, on_timeout=on_timeout, **self._handler_args
                )
        elif timeout is None:
            runner = web.ServerRunner(web.Server(self._target, **self._handler_args))
        else:
            server = HeaderTimeoutServer.adopt(web.Server(self._target, **self._handler_args), timeout, on_timeout)
            runner = web.ServerRunner(server)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port, ssl_context=self.ssl_context, reuse_address=True)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        addresses = runner.addresses
        self._bound_port = addresses[0][1] if addresses else self.port

    async def shutdown(self, grace: float) -> None:
        runner, self._runner = self._runner, None
        if runner is None:
            return
        # aiohttp takes the grace at construction; this stop's grace is only known now.
        runner._shutdown_timeout = grace
        await runner.cleanup()
