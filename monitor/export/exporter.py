"""EvaluationExporter: a bounded queue of evaluation records and one sender thread that sends them in batches
through the OpenTelemetry SDK's OTLP log exporter (gRPC or HTTP/protobuf), calling its `export` directly.

`offer` never blocks and never raises: records beyond `queue_size` are dropped and counted. The SDK exporter
retries transient errors with backoff, within its `timeout` per export (so a sick endpoint holds the sender thread
for at most that long a batch, never the caller); a batch it could not send is counted failed and logged, one line
a minute. Counts go to `EXPORTS` (counts.py), by outcome. `close(timeout)` sends what is queued within the timeout,
then shuts the SDK exporter down (cutting an export that still waits) and counts what is left as dropped.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any

from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult

from evaluators.taken_counts import TakenCounts
from monitor.export.counts import EXPORTS
from monitor.export.records import RecordBuilder
from monitor.logutil import RateLimitedLogger

log = logging.getLogger(__name__)
THREAD_NAME = "evaluation-export"


class EvaluationExporter:
    """Records offered from any thread, sent by one daemon thread of this exporter, `batch_size` at a time."""

    def __init__(
        self,
        exporter: LogRecordExporter,
        builder: RecordBuilder | None = None,
        *,
        queue_size: int = 10_000,
        batch_size: int = 512,
        counts: TakenCounts = EXPORTS,
        endpoint: str = "",
    ) -> None:
        """`exporter`: the SDK's OTLPLogExporter (or any LogRecordExporter); `builder`: the records of outcomes
        (`offer_outcomes`); `endpoint`: for the log lines."""
        self.exporter = exporter
        self.builder = builder if builder is not None else RecordBuilder()
        self.queue_size = queue_size
        self.batch_size = batch_size
        self.counts = counts
        self.endpoint = endpoint
        self._queue: deque[ReadableLogRecord] = deque()
        self._ready = threading.Condition()
        self._closing = False
        self._sending = 0  # records of the batch being sent
        self._problems = RateLimitedLogger(log, per_minute=1)
        self._thread = threading.Thread(target=self._run, name=THREAD_NAME, daemon=True)
        self._thread.start()

    @property
    def queued(self) -> int:
        return len(self._queue)

    def offer(self, records: Sequence[ReadableLogRecord]) -> int:
        """Queue `records` without waiting; those beyond the queue's room (or after close) are dropped and counted.
        How many were queued."""
        if not records:
            return 0
        with self._ready:
            room = 0 if self._closing else max(self.queue_size - len(self._queue), 0)
            taken = min(room, len(records))
            if taken:
                self._queue.extend(records[:taken] if taken < len(records) else records)
                self._ready.notify()
        dropped = len(records) - taken
        if dropped:
            self.counts.add("dropped", dropped)
            self._problems.warning(
                "full", "evaluation export queue full (%d records): %d records dropped", self.queue_size, dropped
            )
        return taken

    def offer_outcomes(self, items: Iterable[Any]) -> int:
        """The records of evaluated traces, late results or sessions (`RecordBuilder.of_outcomes`), queued; a
        failure to build them is logged, never raised."""
        try:
            records = self.builder.of_outcomes(items)
        except Exception as exc:  # a bug here must never fail the evaluation or the store write
            self._problems.warning("build", "building evaluation records failed: %r", exc)
            return 0
        return self.offer(records)

    def _run(self) -> None:
        while True:
            with self._ready:
                while not self._queue and not self._closing:
                    self._ready.wait()
                if not self._queue:
                    return
                count = min(self.batch_size, len(self._queue))
                batch = [self._queue.popleft() for _ in range(count)]
                self._sending = count
            try:
                self._send(batch)
            finally:
                with self._ready:
                    self._sending = 0
                    self._ready.notify_all()

    def _send(self, batch: list[ReadableLogRecord]) -> None:
        try:
            result = self.exporter.export(batch)
        except Exception as exc:
            self.counts.add("failed", len(batch))
            self._problems.warning("failed", "exporting %d evaluation records to %s failed: %r", len(batch),
                                   self.endpoint, exc)  # fmt: skip
            return
        if result is LogRecordExportResult.SUCCESS:
            self.counts.add("exported", len(batch))
            return
        self.counts.add("failed", len(batch))
        self._problems.warning("failed", "exporting %d evaluation records to %s failed", len(batch), self.endpoint)

    def flush(self, timeout: float) -> bool:
        """Wait up to `timeout` until every queued record is sent (or failed); whether it was."""
        deadline = time.monotonic() + timeout
        with self._ready:
            while self._queue or self._sending:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self._thread.is_alive():
                    return False
                self._ready.wait(remaining)
        return True

    def close(self, timeout: float = 5.0) -> None:
        """Send what is queued within `timeout`, then stop the thread and shut the SDK exporter down; the records
        still queued are counted dropped. Idempotent."""
        with self._ready:
            if self._closing:
                return
            self._closing = True
            self._ready.notify_all()
        self._thread.join(max(timeout, 0.0))
        with self._ready:
            left = len(self._queue)
            self._queue.clear()
        self.counts.add("dropped", left)
        try:
            self.exporter.shutdown()  # interrupts a retry's backoff; the thread's export then fails and it ends
        except Exception as exc:
            log.debug("shutting the evaluation exporter down failed: %r", exc)
        self._thread.join(1.0)
        if left:
            log.warning("evaluation export: %d records not sent at shutdown", left)
