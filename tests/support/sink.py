"""A consumer for receiver tests (the Collector's `consumertest.TracesSink` is the model): no engine.

`TracesSink` decodes each request as the engine would (malformed bytes get MALFORMED), records what it was
given, and answers ACCEPTED with the decoded span count, or what it was told: `throttle()`, `malform()` or any
`answer_with(IngestOutcome)`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace

from evaluators.traces import TraceDecodeError
from evaluators.traces.loader import decode_export
from evaluators.traces.records import DecodedBatch, LogRecord, SpanRecord
from monitor.consumer import IngestOutcome, Outcome


@dataclass(slots=True)
class Received:
    """One request the sink was given."""

    payload: bytes
    receiver: str
    encoding: str
    signal: str
    batch: DecodedBatch | None  # None when the bytes did not decode (or the sink was told to refuse first)


@dataclass
class TracesSink:
    """Implements `monitor.consumer.TraceConsumer`; thread-safe (a test may read it from another thread)."""

    requests: list[Received] = field(default_factory=list)
    _answer: IngestOutcome | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def ingest(self, payload: bytes, *, receiver: str, encoding: str, signal: str = "traces") -> IngestOutcome:
        answer = self._answer
        if answer is not None:
            with self._lock:
                self.requests.append(Received(payload, receiver, encoding, signal, None))
            return replace(answer, refused=list(answer.refused))
        try:
            batch = _decode(payload, encoding, signal, receiver)
        except TraceDecodeError as exc:
            with self._lock:
                self.requests.append(Received(payload, receiver, encoding, signal, None))
            return IngestOutcome(Outcome.MALFORMED, message=str(exc)[:500], refused=[("malformed", 1)])
        with self._lock:
            self.requests.append(Received(payload, receiver, encoding, signal, batch))
        return IngestOutcome(Outcome.ACCEPTED, accepted=len(batch.spans))

    def answer_with(self, outcome: IngestOutcome) -> None:
        """Answer every request with `outcome` from now on (recorded undecoded)."""
        self._answer = outcome

    def throttle(self, message: str = "told to throttle", retry_after_seconds: float = 1.0, spans: int = 0) -> None:
        """Answer every request THROTTLED from now on (`spans` counted as refused, reason `throttled`)."""
        self.answer_with(
            IngestOutcome(
                Outcome.THROTTLED,
                message=message,
                retry_after_seconds=retry_after_seconds,
                refused=[("throttled", spans)],
            )
        )

    def malform(self, message: str = "told to refuse as malformed") -> None:
        """Answer every request MALFORMED from now on."""
        self.answer_with(IngestOutcome(Outcome.MALFORMED, message=message, refused=[("malformed", 1)]))

    def accept(self) -> None:
        """Decode and accept again (the default)."""
        self._answer = None

    @property
    def spans(self) -> list[SpanRecord]:
        """Every span accepted so far, in order."""
        with self._lock:
            return [span for r in self.requests if r.batch is not None for span in r.batch.spans]

    @property
    def logs(self) -> list[LogRecord]:
        with self._lock:
            return [record for r in self.requests if r.batch is not None for record in r.batch.logs]

    @property
    def span_count(self) -> int:
        return len(self.spans)


def _decode(payload: bytes, encoding: str, signal: str, receiver: str) -> DecodedBatch:
    return decode_export(payload, encoding, signal, f"{receiver} {signal} request")
