"""Admission control: whether the receivers take an export request or answer with the OTLP throttling response.

Two rules, both about evaluation work that already exists, never about traces in their quiet period:

- **Backlog.** Refuse when the traces that are due (complete, waiting for a worker) fill the evaluation queue.
- **Pacing after a backlog.** Work accepted now becomes due a quiet period later, so an on/off rule alone
  makes waves: everything is refused until the backlog drains, then a quiet period's worth of traces is
  accepted at once and arrives as the next backlog while the workers idle in between. So for a while after
  a backlog (`quiet_period` + 2 s) intake is paced by a token bucket at the measured evaluation rate (in
  spans/s) plus headroom; the headroom lets the rate climb until the workers are busy again. Outside that
  window nothing is paced: a burst into an idle daemon is taken whole (memory has its own bound).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from monitor.engine.assembler import TraceAssembler
from monitor.engine.pool import EvaluationPool

HEADROOM = 1.25  # paced intake may exceed the measured evaluation rate by this factor
RATE_WINDOW_SECONDS = 1.0
BURST_SECONDS = 0.25  # token bucket depth, in seconds of intake


class Admission:
    def __init__(
        self,
        assembler: TraceAssembler,
        pool: EvaluationPool,
        *,
        quiet_period: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.assembler = assembler
        self.pool = pool
        self.clock = clock
        self.hold_seconds = quiet_period + 2.0
        self.rate = 0.0  # evaluated spans/s, smoothed
        self._window_start = clock()
        self._window_spans = 0
        self._paced_until = -1.0
        self._tokens = 0.0
        self._tokens_at = clock()

    def backlogged(self) -> bool:
        """Due traces waiting for a worker fill the evaluation queue."""
        return self.assembler.due_count + self.pool.waiting >= self.pool.queue_size

    @property
    def pacing(self) -> bool:
        return self.clock() < self._paced_until

    def refuse(self, count_spans: Callable[[], int]) -> bool:
        """True when a request must get the throttling answer; `count_spans()` is called only when pacing."""
        now = self.clock()
        if self.backlogged():
            if now >= self._paced_until:
                self._tokens, self._tokens_at = 0.0, now
            self._paced_until = now + self.hold_seconds
            return True
        if now >= self._paced_until or self.rate <= 0:
            return False
        limit = self.rate * HEADROOM
        self._tokens = min(self._tokens + (now - self._tokens_at) * limit, limit * BURST_SECONDS)
        self._tokens_at = now
        spans = count_spans()
        if spans > self._tokens and self._tokens < limit * BURST_SECONDS:
            return True  # a request larger than the whole bucket still passes once the bucket is full
        self._tokens -= spans
        return False

    def evaluated(self, spans: int) -> None:
        """Count spans of evaluated traces; the rate is smoothed over RATE_WINDOW_SECONDS windows."""
        self._window_spans += spans
        now = self.clock()
        elapsed = now - self._window_start
        if elapsed >= RATE_WINDOW_SECONDS:
            current = self._window_spans / elapsed
            self.rate = current if self.rate <= 0 else 0.5 * self.rate + 0.5 * current
            self._window_start, self._window_spans = now, 0
