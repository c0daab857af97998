"""The contract between what brings spans in (receivers, pollers) and the engine that takes them.

Receivers call a `TraceConsumer` (the OpenTelemetry Collector's `consumer.Traces` is the model): they pass
the bytes of one export request and reply to their client as the `IngestOutcome` says. The consumer decodes
(it refuses under overload before decoding, so the bytes are its input) and counts nothing per receiver: the
outcome says what was accepted and refused, and the receiver counts it in its own telemetry
(`monitor.metrics.intake.ReceiverTelemetry`). Authentication is the receivers' own (`monitor.auth.Authenticator`).
Pollers hand whole traces (`PolledTrace`) or spans to a `PollSink`. Neither sees the assembler or the
evaluation queue.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

from evaluators.traces.records import LogRecord, SpanRecord


class Outcome(StrEnum):
    ACCEPTED = "accepted"
    THROTTLED = "throttled"
    MALFORMED = "malformed"


@dataclass(slots=True)
class IngestOutcome:
    """The answer to one request. `accepted`: spans taken; `rejected`: spans of an accepted request left out
    (the partial-success count); `refused`: (reason, spans) for the receiver's `agent_monitor_spans_refused`;
    `dropped_attributes`: attributes nested too deep, left out of accepted records; `trace_ids`: the traces of
    the accepted records (listed only for the intake log: `Ingestor.record_trace_ids`); `durable`: when set,
    awaited before answering (the intake log: True once the request is on disk, False when it could not be
    written: answer throttled, `settled`)."""

    outcome: Outcome
    accepted: int = 0
    rejected: int = 0
    message: str = ""
    retry_after_seconds: float = 0.0
    refused: list[tuple[str, int]] = field(default_factory=list)
    dropped_attributes: int = 0
    trace_ids: list[str] = field(default_factory=list)
    durable: Awaitable[bool] | None = None


async def settled(outcome: IngestOutcome) -> IngestOutcome:
    """The outcome to answer once its request is durable: throttled when the intake log could not write it
    (its spans are evaluated all the same; the exporter's retry is dropped as duplicate or late)."""
    if outcome.durable is None or await outcome.durable:
        return outcome
    return unwritten(outcome)


def unwritten(outcome: IngestOutcome) -> IngestOutcome:
    """The throttled answer to an accepted request the intake log could not write."""
    return IngestOutcome(
        Outcome.THROTTLED,
        message="the intake log could not be written; retry later",
        retry_after_seconds=1,
        refused=[("throttled", outcome.accepted)],
    )


class TraceConsumer(Protocol):
    """What a receiver calls for each export request (see `monitor.engine.ingest.Ingestor`; in tests,
    `tests.support.sink.TracesSink`)."""

    def ingest(self, payload: bytes, *, receiver: str, encoding: str, signal: str = "traces") -> IngestOutcome:
        """Take one request body (decompressed); encoding "protobuf" | "json", signal "traces" | "logs".
        `receiver` names the caller in log lines."""
        ...


# One vocabulary for agent_monitor_requests_total{code} on both receivers: the gRPC status name.
_GRPC_CODE_OF_HTTP = {
    200: "OK",
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "UNIMPLEMENTED",
    405: "UNIMPLEMENTED",
    408: "DEADLINE_EXCEEDED",
    413: "RESOURCE_EXHAUSTED",
    415: "INVALID_ARGUMENT",
    429: "UNAVAILABLE",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}


def grpc_code_of_http(status: int) -> str:
    """The gRPC status name an HTTP answer of the OTLP/HTTP receiver is counted under (UNKNOWN if unmapped)."""
    return _GRPC_CODE_OF_HTTP.get(status, "UNKNOWN")


@dataclass(slots=True)
class PolledTrace:
    """A whole trace from a trace store. `start`/`end`: Unix seconds (`start` is the time the source filters on;
    `end` the end of its last span, None when unknown). Spans are ordinary SpanRecords, ids lowercase hex."""

    trace_id: str
    start: float
    end: float | None
    spans: list[SpanRecord]
    logs: list[LogRecord] = field(default_factory=list)


class PollSink(Protocol):
    """Where polled traces go: the daemon's engine (`monitor.engine.poll_intake`) or `agent-monitor poll`."""

    def claim(self, trace_ids: list[str]) -> list[str]:
        """The ids to evaluate here (a trace also received, or evaluated moments ago, is left out)."""
        ...

    async def evaluate(self, traces: list[PolledTrace], stop: Callable[[], bool] = lambda: False) -> list[PolledTrace]:
        """Evaluate the traces; return once their results are recorded, with the traces handed over (all of them,
        unless `stop()` became true meanwhile: then those not yet handed over are left out)."""
        ...

    async def wait_for_room(self, stop: Callable[[], bool] = lambda: False) -> None:
        """Return once more polled traces would be taken (or `stop()`): a poller asks before fetching its next
        page, so a page is not read and decoded while the receivers use the capacity."""
        ...

    def feed(self, spans: list[SpanRecord], logs: list[LogRecord]) -> None:
        """Spans of a span feed, to be assembled into traces like received spans."""
        ...
