"""What both receivers do with an export request: decode, check capacity, hand spans to the assembler.

Implements `monitor.consumer.TraceConsumer`. The answer (`IngestOutcome`) says what the receiver must
reply: accepted (with partial-success counts), throttled (retry later) or malformed, and which spans were
refused for which reason: the receiver counts those in its own telemetry. Nothing is counted here: the assembler
keeps its own figures (spans held, late and duplicate spans), which its metrics read at scrape time.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from itertools import chain

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from evaluators.traces import TraceDecodeError
from evaluators.traces.loader import decode_export
from evaluators.traces.otlp_depth import MAX_VALUE_DEPTH
from evaluators.traces.raw_spans import RawBatch, decode_traces_raw
from evaluators.traces.records import DecodedBatch, LogRecord
from monitor.consumer import IngestOutcome, Outcome
from monitor.engine.assembler import TraceAssembler
from monitor.engine.external_results import EVALUATION_EVENT
from monitor.engine.span_size import log_bytes, resource_bytes, span_bytes
from monitor.logutil import RateLimitedLogger

log = logging.getLogger(__name__)


class Ingestor:
    """Decode → size limits → assembler (admission control is before it: admission.AdmissionGate)."""

    def __init__(
        self,
        assembler: TraceAssembler,
        *,
        retry_after_seconds: float = 5.0,
        problem_log: RateLimitedLogger | None = None,
    ) -> None:
        self.assembler = assembler
        self.retry_after_seconds = retry_after_seconds
        self.problems = problem_log or RateLimitedLogger(log, per_minute=10)
        self.accepting = True
        # Whether an accepted outcome lists its trace ids (the intake log's holds; nothing else reads them).
        self.record_trace_ids = False
        # Where the evaluation records of traces evaluated already go (late_evaluations.py; None: dropped as late).
        self.late_evaluations: Callable[[Sequence[LogRecord]], None] | None = None

    def ingest(self, payload: bytes, *, receiver: str, encoding: str, signal: str = "traces") -> IngestOutcome:
        """One export request body (already decompressed). encoding: "protobuf" | "json"."""
        if not self.accepting:
            return IngestOutcome(Outcome.THROTTLED, message="shutting down", retry_after_seconds=1)
        try:
            batch = self.decode(payload, encoding, signal, receiver)
        except TraceDecodeError as exc:
            self.problems.warning("malformed_request", "%s receiver: malformed %s request: %s", receiver, signal, exc)
            return IngestOutcome(Outcome.MALFORMED, message=str(exc)[:500], refused=[("malformed", 1)])
        sizes = [span_bytes(span) for span in batch.spans]
        log_sizes = [log_bytes(record) for record in batch.logs]
        over_limit = self._over_limit(batch, _batch_bytes(batch, sizes, log_sizes))
        if over_limit is not None:
            return over_limit
        return self._accept(batch, sizes, log_sizes, receiver)

    def replay(self, batch: DecodedBatch | RawBatch, receiver: str, leave_out: set[str]) -> IngestOutcome:
        """A decoded request from the intake log, at start: the spans and log records of the traces in
        `leave_out` (stored before the restart) dropped, the rest to the assembler (no limits: the caller waits
        for room)."""
        if leave_out and isinstance(batch, RawBatch):
            batch = RawBatch([s for s in batch.spans if s.trace_id not in leave_out], [], batch.dropped_attributes)
        elif leave_out and isinstance(batch, DecodedBatch):
            spans = [s for s in batch.spans if s.trace_id not in leave_out]
            logs = [r for r in batch.logs if r.trace_id not in leave_out]
            batch = DecodedBatch(spans, logs, [], batch.dropped_attributes)
        sizes = [span_bytes(span) for span in batch.spans]
        return self._accept(batch, sizes, [log_bytes(record) for record in batch.logs], receiver)

    def _over_limit(self, batch: DecodedBatch | RawBatch, size_bytes: int) -> IngestOutcome | None:
        """The throttled answer when the batch would pass the assembler's pending-span or pending-byte limit."""
        crossed = self.assembler.limit_crossed(len(batch.spans) + len(batch.logs), size_bytes)
        if crossed is None:
            return None
        if crossed == "bytes":
            reason, limit = "pending_bytes", f"pending-byte limit ({self.assembler.max_pending_bytes} bytes)"
        else:
            reason, limit = "throttled", f"pending-span limit ({self.assembler.max_pending_spans})"
        return IngestOutcome(
            Outcome.THROTTLED,
            message=f"over the {limit}; retry later",
            retry_after_seconds=self.retry_after_seconds,
            refused=[(reason, len(batch.spans))] if batch.spans else [],
        )

    def _accept(
        self, batch: DecodedBatch | RawBatch, sizes: list[int], log_sizes: list[int], receiver: str
    ) -> IngestOutcome:
        """Hand the batch to the assembler; the accepted answer, with the spans refused and why."""
        if batch.dropped_attributes:
            self.problems.warning(
                "too_deep",
                "%s receiver: %d attributes nested deeper than %d levels left out",
                receiver,
                batch.dropped_attributes,
                MAX_VALUE_DEPTH,
            )
        refused: list[tuple[str, int]] = []
        if batch.rejected:
            refused.append(("invalid_id", len(batch.rejected)))
            self.problems.warning("invalid_id", "%s receiver: %s", receiver, batch.rejected[0].where)
        if batch.logs:
            self._add_logs(batch.logs, log_sizes)
        result = self.assembler.add(batch.spans, sizes)  # the assembler counts late and duplicate spans itself
        parts = [f"{len(batch.rejected)} spans with invalid ids"] if batch.rejected else []
        if result.over_trace_cap:
            refused.append(("per_trace_cap", result.over_trace_cap))
            cap = self.assembler.max_spans_per_trace
            parts.append(f"{result.over_trace_cap} spans over the per-trace cap of {cap}")
        return IngestOutcome(
            Outcome.ACCEPTED,
            accepted=result.accepted,
            rejected=len(batch.rejected) + result.over_trace_cap,
            message="; ".join(parts),
            refused=refused,
            dropped_attributes=batch.dropped_attributes,
            trace_ids=trace_ids_of(batch) if self.record_trace_ids else [],
        )

    def _add_logs(self, logs: Sequence[LogRecord], sizes: list[int]) -> None:
        """The records to the assembler; the evaluation records of traces evaluated already to `late_evaluations`."""
        late_evaluations = self.late_evaluations
        if late_evaluations is not None:
            evaluated = self.assembler.evaluated_already
            late = [r for r in logs if r.event_name == EVALUATION_EVENT and evaluated(r.trace_id)]
            if late:
                late_evaluations(late)
        self.assembler.add_logs(logs, sizes)  # holds no record of an evaluated trace

    @staticmethod
    def decode(payload: bytes, encoding: str, signal: str, receiver: str) -> DecodedBatch | RawBatch:
        """Protobuf spans stay raw (evaluators.traces.raw_spans: the worker decodes them); the rest is decoded."""
        where = f"{receiver} {signal} request"
        if encoding == "protobuf" and signal == "traces":
            return decode_traces_raw(payload, where, receiver)
        return decode_export(payload, encoding, signal, where)


def trace_ids_of(batch: DecodedBatch | RawBatch) -> list[str]:
    """The distinct trace ids of a batch's spans and log records."""
    ids = dict.fromkeys(span.trace_id for span in batch.spans)
    ids.update(dict.fromkeys(record.trace_id for record in batch.logs))
    return list(ids)


def _batch_bytes(batch: DecodedBatch | RawBatch, sizes: list[int], log_sizes: list[int]) -> int:
    """The estimated bytes a batch would add: its records and each distinct resource once."""
    total = sum(sizes) + sum(log_sizes)
    last = None
    for resource in chain((s.resource_attributes for s in batch.spans), (r.resource_attributes for r in batch.logs)):
        if resource is not last:
            last = resource
            total += resource_bytes(resource)
    return total


def count_spans(payload: bytes, encoding: str, signal: str) -> int:
    """Spans in a protobuf traces request, by the C parser alone (no records built); 0 when unknown."""
    if encoding != "protobuf" or signal != "traces":
        return 0
    try:
        request = ExportTraceServiceRequest.FromString(payload)
    except Exception:
        return 0
    return sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)
