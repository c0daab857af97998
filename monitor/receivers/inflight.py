"""Bounds on what the receivers hold at once: request bytes (`InflightBytes`) and gRPC calls being read (`ReadSlots`).

`InflightBytes` is the Collector's memory limiter, per process: the bytes of request bodies that have arrived
and are not answered yet. The HTTP receiver reserves each chunk of a body as it arrives, the gRPC receiver a
message once it has arrived (grpc.aio shows no bytes before); both release when the request is answered. A
reservation that would cross the limit is refused and answered with the OTLP throttling response. A request
waiting for its body reserves nothing, so idle clients cannot take the budget from others.

`ReadSlots` bounds the gRPC calls whose message is still arriving (gRPC assembles each in memory, up to
`max_message_bytes`, before the handler sees a byte): beyond it, the oldest call still waiting for its
message after a second is cut to make room, or else the new call is refused unread.

One instance of each is shared by the receivers; they live on the event loop thread (no lock).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass


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


@dataclass(slots=True, eq=False)
class ReadSlot:
    """One call whose message is arriving; `timer` is the timeout its read runs under."""

    started: float
    timer: asyncio.Timeout | None = None
    preempted: bool = False


class ReadSlots:
    """The calls whose message is still arriving, at most `limit` at once.

    When all are taken, the oldest one that has been waiting for its message for `preempt_after` seconds or
    more is cut to make room (its read times out at once, `preempted` set): a caller that opens calls and sends
    nothing cannot hold the slots while others wait. A new call is refused only when every slot was taken
    less than `preempt_after` ago."""

    def __init__(self, limit: int, preempt_after: float) -> None:
        if limit <= 0:
            raise ValueError("limit must be positive")
        self.limit = limit
        self.preempt_after = preempt_after
        self.preempted = 0
        self._slots: dict[ReadSlot, None] = {}  # oldest first

    @property
    def in_use(self) -> int:
        return len(self._slots)

    def take(self) -> ReadSlot | None:
        now = time.monotonic()
        if len(self._slots) >= self.limit and not self._preempt_oldest(now):
            return None
        slot = ReadSlot(now)
        self._slots[slot] = None
        return slot

    def give_back(self, slot: ReadSlot) -> None:
        self._slots.pop(slot, None)

    def _preempt_oldest(self, now: float) -> bool:
        oldest = next(iter(self._slots))
        if now - oldest.started < self.preempt_after or oldest.timer is None:
            return False
        del self._slots[oldest]
        oldest.preempted = True
        self.preempted += 1
        with contextlib.suppress(RuntimeError):  # a timer already left: its read is over anyway
            oldest.timer.reschedule(asyncio.get_running_loop().time())
        return True
