"""Bounds on what the receivers hold at once: request bytes (`InflightBytes`) and gRPC calls being read (`CallSlots`).

`InflightBytes` is the Collector's memory limiter, per process: the bytes of request bodies that have arrived
and are not answered yet. The HTTP receiver reserves each chunk of a body as it arrives, the gRPC receiver a
message once it has arrived (grpc.aio shows no bytes before); both release when the request is answered. A
reservation that would cross the limit is refused and answered with the OTLP throttling response. A request
waiting for its body reserves nothing, so idle clients cannot take the budget from others.

`CallSlots` bounds the gRPC calls whose message is still arriving (gRPC assembles each in memory, up to
`max_message_bytes`, before the handler sees a byte): beyond it, calls are refused unread.

One instance of each is shared by the receivers; they live on the event loop thread (no lock).
"""

from __future__ import annotations


class InflightBytes:
    def __init__(self, limit_bytes: int) -> None:
        if limit_bytes <= 0:
            raise ValueError("limit_bytes must be positive")
        self.limit_bytes = limit_bytes
        self.in_use = 0

    def has_room(self, size: int) -> bool:
        """Whether `size` more bytes would be taken now (by a request that holds nothing yet)."""
        return self.in_use == 0 or self.in_use + max(size, 0) <= self.limit_bytes

    def try_acquire(self, size: int, held: int = 0) -> bool:
        """Reserve `size` more bytes for a request already holding `held`; False (nothing reserved) past the limit.

        A request is always admitted while no other request holds anything, so one request under the size
        cap but over this limit is not refused forever."""
        size = max(size, 0)
        if self.in_use > held and self.in_use + size > self.limit_bytes:
            return False
        self.in_use += size
        return True

    def release(self, size: int) -> None:
        self.in_use = max(self.in_use - max(size, 0), 0)


class CallSlots:
    """A count of calls in one state (here: message still arriving), bounded by `limit`."""

    def __init__(self, limit: int) -> None:
        if limit <= 0:
            raise ValueError("limit must be positive")
        self.limit = limit
        self.in_use = 0

    def try_take(self) -> bool:
        if self.in_use >= self.limit:
            return False
        self.in_use += 1
        return True

    def give_back(self) -> None:
        self.in_use = max(self.in_use - 1, 0)
