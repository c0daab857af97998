"""What both receivers do with an export request: decode, check capacity, hand spans to the assembler.

Implements `monitor.consumer.TraceConsumer`. The answer (`IngestOutcome`) says what the receiver must
reply: accepted (with partial-success counts), throttled (retry later) or malformed. Counters are updated
here so the two receivers report identically.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from itertools import chain

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from evaluators.traces import TraceDecodeError
from evaluators.traces.otlp_depth import MAX_VALUE_DEPTH
from evaluators.traces.otlp_json import decode_traces_json
from evaluators.traces.otlp_proto import decode_logs_protobuf, decode_traces_protobuf
from evaluators.traces.records import DecodedBatch
from monitor.auth import bearer_authorized
from monitor.consumer import IngestOutcome, Outcome
from monitor.engine.assembler import TraceAssembler
from monitor.engine.span_size import log_bytes, resource_bytes, span_bytes
from monitor.logutil import RateLimitedLogger
from monitor.metrics import MetricsExporter

log = logging.getLogger(__name__)


class Ingestor:
    """Decode → capacity check → assembler, with the receiver-side metrics."""

    def __init__(
        self,
        assembler: TraceAssembler,
        metrics: MetricsExporter,
        *,
        bearer_token: str | None = None,
        retry_after_seconds: float = 5.0,
        backlog_retry_seconds: float = 0.25,
        problem_log: RateLimitedLogger | None = None,
        admission_refuses: Callable[[], bool] | None = None,
    ) -> None:
        self.assembler = assembler
        self.metrics = metrics
        self.bearer_token = bearer_token
        self.retry_after_seconds = retry_after_seconds
        self.backlog_retry_seconds = backlog_retry_seconds  # the evaluation queue drains in well under a second
        self.problems = problem_log or RateLimitedLogger(log, per_minute=10)
        self.accepting = True
        # Admission control (monitor.engine.admission): True when the next request must be refused.
        self.admission_refuses = admission_refuses or (lambda: False)

    def authorized(self, authorization: str | None) -> bool:
        """True when no token is configured, or the `Authorization: Bearer …` value matches it."""
        return bearer_authorized(authorization, self.bearer_token)

    def count_request(self, receiver: str, code: str) -> None:
        """Count one answered export request; `code` is a gRPC status name (see grpc_code_of_http)."""
        self.metrics.requests.labels(receiver=receiver, code=code).inc()

    def refuse(self, receiver: str, reason: str, spans: int = 1) -> None:
        """Count spans refused before decoding (one per request when the count is unknown)."""
        self.metrics.spans_refused.labels(receiver=receiver, reason=reason).inc(spans)

    def ingest(self, payload: bytes, *, receiver: str, encoding: str, signal: str = "traces") -> IngestOutcome:
        """One export request body (already decompressed). encoding: "protobuf" | "json"."""
        if not self.accepting:
            return IngestOutcome(Outcome.THROTTLED, message="shutting down", retry_after_seconds=1)
        if self.admission_refuses():
            # Refuse before decoding: under overload the CPU goes to evaluation, not to spans we drop.
            self.refuse(receiver, "throttled", _count_spans(payload, encoding, signal))
            return IngestOutcome(
                Outcome.THROTTLED,
                message="evaluation is behind; retry later",
                retry_after_seconds=self.backlog_retry_seconds,
            )
        try:
            batch = self._decode(payload, encoding, signal, receiver)
        except TraceDecodeError as exc:
            self.refuse(receiver, "malformed")
            self.problems.warning("malformed_request", "%s receiver: malformed %s request: %s", receiver, signal, exc)
            return IngestOutcome(Outcome.MALFORMED, message=str(exc)[:500])
        incoming = len(batch.spans) + len(batch.logs)
        sizes = [span_bytes(span) for span in batch.spans]
        log_sizes = [log_bytes(record) for record in batch.logs]
        crossed = self.assembler.limit_crossed(incoming, _batch_bytes(batch, sizes, log_sizes))
        if crossed is not None:
            if crossed == "bytes":
                reason, limit = "pending_bytes", f"pending-byte limit ({self.assembler.max_pending_bytes} bytes)"
            else:
                reason, limit = "throttled", f"pending-span limit ({self.assembler.max_pending_spans})"
            if batch.spans:
                self.refuse(receiver, reason, len(batch.spans))
            return IngestOutcome(
                Outcome.THROTTLED,
                message=f"over the {limit}; retry later",
                retry_after_seconds=self.retry_after_seconds,
            )
        if batch.dropped_attributes:
            self.metrics.attributes_dropped.labels(receiver=receiver, reason="too_deep").inc(batch.dropped_attributes)
            self.problems.warning(
                "too_deep",
                "%s receiver: %d attributes nested deeper than %d levels left out",
                receiver,
                batch.dropped_attributes,
                MAX_VALUE_DEPTH,
            )
        rejected = len(batch.rejected)
        if rejected:
            self.refuse(receiver, "invalid_id", rejected)
            self.problems.warning("invalid_id", "%s receiver: %s", receiver, batch.rejected[0].where)
        if batch.logs:
            self.assembler.add_logs(batch.logs, log_sizes)
        result = self.assembler.add(batch.spans, sizes)
        if result.over_trace_cap:
            self.refuse(receiver, "per_trace_cap", result.over_trace_cap)
        if result.duplicates:
            self.metrics.duplicate_spans.inc(result.duplicates)
        if result.late:
            self.metrics.late_spans.inc(result.late)
        self.metrics.spans_received.labels(receiver=receiver).inc(result.accepted)
        rejected += result.over_trace_cap
        message = ""
        if rejected:
            parts = []
            if batch.rejected:
                parts.append(f"{len(batch.rejected)} spans with invalid ids")
            if result.over_trace_cap:
                parts.append(
                    f"{result.over_trace_cap} spans over the per-trace cap of {self.assembler.max_spans_per_trace}"
                )
            message = "; ".join(parts)
        self.update_gauges()
        return IngestOutcome(Outcome.ACCEPTED, accepted=result.accepted, rejected=rejected, message=message)

    def update_gauges(self) -> None:
        self.metrics.traces_pending.set(self.assembler.traces_pending)
        self.metrics.spans_pending.set(self.assembler.spans_held)
        self.metrics.bytes_pending.set(self.assembler.bytes_held)

    @staticmethod
    def _decode(payload: bytes, encoding: str, signal: str, receiver: str) -> DecodedBatch:
        where = f"{receiver} {signal} request"
        if encoding == "json":
            batch = decode_traces_json(payload, where)
            if signal == "logs":
                batch.spans.clear()
            return batch
        if signal == "logs":
            return decode_logs_protobuf(payload, where)
        return decode_traces_protobuf(payload, where)


def _batch_bytes(batch: DecodedBatch, sizes: list[int], log_sizes: list[int]) -> int:
    """The estimated bytes a batch would add: its records and each distinct resource once."""
    total = sum(sizes) + sum(log_sizes)
    last = None
    for resource in chain((s.resource_attributes for s in batch.spans), (r.resource_attributes for r in batch.logs)):
        if resource is not last:
            last = resource
            total += resource_bytes(resource)
    return total


def _count_spans(payload: bytes, encoding: str, signal: str) -> int:
    """Spans in a protobuf traces request, by the C parser alone (no records built); 0 when unknown."""
    if encoding != "protobuf" or signal != "traces":
        return 0
    try:
        request = ExportTraceServiceRequest.FromString(payload)
    except Exception:
        return 0
    return sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)
