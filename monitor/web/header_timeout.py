"""A header read timeout for aiohttp's server, which has none: a request whose line and headers have not all
arrived within `header_timeout` seconds of its first byte is cut (the connection closed). aiohttp's keep-alive
timer is the only other bound, and it runs from the connection's start or its last response (75 s here), so
without this a client could hold a connection with a partial request for that long, and more by trickling.

The timer starts when a byte of a new request arrives (not while a request's body is being read: the receiver's
read timeouts bound that) and stops once the parser has the whole head."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from aiohttp import web
from aiohttp.web_protocol import RequestHandler

OnTimeout = Callable[[], None]


class HeaderTimeoutHandler(RequestHandler):
    """aiohttp's connection handler with the header timer (see the module docstring)."""

    def __init__(self, *args: Any, header_timeout: float, on_header_timeout: OnTimeout | None, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self._header_timeout = header_timeout
        self._on_header_timeout = on_header_timeout
        self._header_timer: asyncio.TimerHandle | None = None
        self._body: Any = None  # the payload of the last request whose head arrived (EOF once its body is read)

    def data_received(self, data: bytes) -> None:
        reading_head = self._body is None or self._body.is_eof()
        if data and reading_head and self._header_timer is None and not (self._force_close or self._close):
            self._header_timer = self._loop.call_later(self._header_timeout, self._head_timed_out)
        queued = len(self._messages)
        super().data_received(data)
        if len(self._messages) > queued:  # a whole head (or several) arrived
            self._body = self._messages[-1][1]
            self._cancel_header_timer()

    def connection_lost(self, exc: BaseException | None) -> None:
        self._cancel_header_timer()
        super().connection_lost(exc)

    def _cancel_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _head_timed_out(self) -> None:
        self._header_timer = None
        if self._force_close or self.transport is None:
            return
        if self._on_header_timeout is not None:
            self._on_header_timeout()
        if self._request_in_progress:  # a pipelined head stalls behind a request: close after its answer
            self.close()
        else:
            self.force_close()


class HeaderTimeoutServer(web.Server):
    """`web.Server` whose connections get HeaderTimeoutHandler; `header_timeout` and `on_header_timeout` are
    set by `adopt` (or the constructor's keywords)."""

    header_timeout: float = 10.0
    on_header_timeout: OnTimeout | None = None

    def __call__(self) -> RequestHandler:
        return HeaderTimeoutHandler(
            self,
            loop=self._loop,
            header_timeout=self.header_timeout,
            on_header_timeout=self.on_header_timeout,
            **self._kwargs,
        )

    @classmethod
    def adopt(cls, server: web.Server, header_timeout: float, on_timeout: OnTimeout | None) -> HeaderTimeoutServer:
        """`server` (made by aiohttp's AppRunner, with the application's handler and settings) turned into one of
        these in place: the class adds no state, only the handler it makes."""
        server.__class__ = cls
        adopted: HeaderTimeoutServer = server  # type: ignore[assignment]
        adopted.header_timeout, adopted.on_header_timeout = header_timeout, on_timeout
        return adopted


class HeaderTimeoutAppRunner(web.AppRunner):
    """`web.AppRunner` whose server applies a header timeout."""

    def __init__(self, app: web.Application, *, header_timeout: float, on_timeout: OnTimeout | None, **kw: Any):
        super().__init__(app, **kw)
        self._header_args = (header_timeout, on_timeout)

    async def _make_server(self) -> web.Server:
        return HeaderTimeoutServer.adopt(await super()._make_server(), *self._header_args)
