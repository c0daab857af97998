"""A bound on the request bytes held by the receivers at once (the Collector's memory limiter, per process).

Both receivers reserve a request's size before reading or decoding it and release it when the request is
answered. A reservation that would cross the limit waits briefly for bytes to be released (a burst of
calls queues for a moment instead of being throttled at once; a waiting call holds no body, only its
headers and at most one flow-control window), then is refused and answered with the OTLP throttling
response. One instance is shared by both receivers; it lives on the event loop thread (no lock).
"""

from __future__ import annotations

import asyncio
import contextlib

DEFAULT_WAIT_SECONDS = 0.5  # well under exporters' 10 s default timeout


class InflightBytes:
    def __init__(self, limit_bytes: int, wait_seconds: float = DEFAULT_WAIT_SECONDS) -> None:
        if limit_bytes <= 0:
            raise ValueError("limit_bytes must be positive")
        self.limit_bytes = limit_bytes
        self.wait_seconds = wait_seconds
        self.in_use = 0
        self._waiters: list[asyncio.Future[None]] = []

    def try_acquire(self, size: int) -> bool:
        """Reserve `size` bytes now; False (nothing reserved) when that would cross the limit.

        A single request is always admitted while nothing else is in flight, so a request under the
        size cap but over this limit is not refused forever."""
        size = max(size, 0)
        if self.in_use and self.in_use + size > self.limit_bytes:
            return False
        self.in_use += size
        return True

    async def acquire(self, size: int) -> bool:
        """Reserve `size` bytes, waiting up to `wait_seconds` for releases; False when still short."""
        if self.try_acquire(size):
            return True
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.wait_seconds
        while (remaining := deadline - loop.time()) > 0:
            released: asyncio.Future[None] = loop.create_future()
            self._waiters.append(released)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(released, remaining)
            if self.try_acquire(size):
                return True
        return False

    def release(self, size: int) -> None:
        self.in_use = max(self.in_use - max(size, 0), 0)
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)
