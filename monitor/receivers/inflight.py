"""A bound on the request bytes held by the receivers at once (the Collector's memory limiter, per process).

Both receivers reserve a request's size before reading or decoding it and release it when the request is
answered; a reservation that would cross the limit is refused and answered with the OTLP throttling
response. One instance is shared by both receivers; it lives on the event loop thread (no lock).
"""

from __future__ import annotations


class InflightBytes:
    def __init__(self, limit_bytes: int) -> None:
        if limit_bytes <= 0:
            raise ValueError("limit_bytes must be positive")
        self.limit_bytes = limit_bytes
        self.in_use = 0

    def try_acquire(self, size: int) -> bool:
        """Reserve `size` bytes; False (nothing reserved) when that would cross the limit.

        A single request is always admitted while nothing else is in flight, so a request under the
        size cap but over this limit is not refused forever."""
        size = max(size, 0)
        if self.in_use and self.in_use + size > self.limit_bytes:
            return False
        self.in_use += size
        return True

    def release(self, size: int) -> None:
        self.in_use = max(self.in_use - max(size, 0), 0)
