"""The assembler's byte bound (issue 23, defect 6): held spans are bounded by their estimated bytes, not only
their count, and the request that would cross `max_pending_bytes` gets the OTLP throttling answer, counted."""

from __future__ import annotations

from evaluators.traces.records import LogRecord, SpanRecord
from monitor.consumer import Outcome
from monitor.engine.assembler import TraceAssembler
from monitor.engine.ingest import Ingestor
from monitor.engine.span_size import resource_bytes, span_bytes
from monitor.metrics import MetricsExporter
from tests.integration.otlp_raw import request, span

ROOT = "a" * 16
MB = 1_000_000
TRACE = "1" * 32


def child(trace_id: str, span_id: str, text: str = "", resource: dict | None = None) -> SpanRecord:
    record = SpanRecord(trace_id, span_id, ROOT, "llm", 1, 1, 2, attributes={"gen_ai.output": text} if text else {})
    record.resource_attributes = resource if resource is not None else {}
    return record


def test_bytes_are_held_while_a_trace_assembles_and_released_when_it_is_taken():
    clock = [1000.0]
    asm = TraceAssembler(quiet_period=1, max_trace_wait=10, clock=lambda: clock[0])
    big = child(TRACE, "b" * 16, "x" * MB)
    asm.add([big])
    asm.add_logs([LogRecord(TRACE, "b" * 16, "gen_ai.choice", body="y" * MB)])
    assert 2 * MB <= asm.bytes_held < 2 * MB + 10_000
    assert asm.bytes_pending == asm.bytes_held and asm.bytes_due == 0
    clock[0] += 11  # max_trace_wait: the root never ended
    asm.collect_due()
    assert asm.bytes_pending == 0 and asm.bytes_due >= 2 * MB  # due: still held
    [completed] = asm.take_due()
    assert completed.size_bytes >= 2 * MB and asm.bytes_held == 0


def test_a_shared_resource_is_charged_once_per_trace_and_request():
    resource = {"service.name": "agent", "process.command_args": "z" * 50_000}
    spans = [child(TRACE, f"{i + 1:016x}", resource=resource) for i in range(100)]
    spans += [child("2" * 32, f"{i + 1:016x}", resource=resource) for i in range(100)]
    asm = TraceAssembler()
    asm.add(spans)
    own = sum(span_bytes(s) for s in spans)
    assert asm.bytes_held == own + 2 * resource_bytes(resource)  # once for each of the two traces


def test_the_byte_limit_refuses_what_would_cross_it_and_a_lone_request_is_admitted():
    asm = TraceAssembler(max_pending_bytes=3 * MB)
    assert asm.limit_crossed(1, 10 * MB) is None  # empty: any one request fits
    asm.add([child(TRACE, "b" * 16, "x" * (2 * MB))])
    assert asm.limit_crossed(1, MB // 2) is None
    assert asm.limit_crossed(1, 2 * MB) == "bytes" and not asm.has_room_for(1, 2 * MB)
    assert asm.limit_crossed(10**9, 0) == "spans"


def test_large_child_spans_of_a_trace_whose_root_never_ends_are_refused_with_the_throttling_answer():
    """The issue's reproduction, scaled down: 40 child spans of 1 MB, root never sent, 8 MB allowed."""
    metrics = MetricsExporter()
    assembler = TraceAssembler(max_pending_bytes=8 * MB)
    ingestor = Ingestor(assembler, retry_after_seconds=5)
    metrics.assembly.observe(assembler)  # as the daemon wires it: the pending gauges read the assembler
    outcomes = []
    for index in range(40):
        body = request([span(TRACE, f"{index + 1:016x}", ROOT, attrs={"gen_ai.output": "x" * MB})])
        outcomes.append(ingestor.ingest(body.SerializeToString(), receiver="http", encoding="protobuf"))
        metrics.intake.receiver("http").ingested(outcomes[-1])  # what the receiver counts from the answer
    accepted = [o for o in outcomes if o.outcome is Outcome.ACCEPTED]
    throttled = [o for o in outcomes if o.outcome is Outcome.THROTTLED]
    assert 6 <= len(accepted) <= 8 and len(accepted) + len(throttled) == 40
    assert all(o.retry_after_seconds == 5 and "pending-byte limit" in o.message for o in throttled)
    assert assembler.bytes_held <= 8 * MB and assembler.spans_held == len(accepted)
    sample = metrics.registry.get_sample_value
    assert sample("agent_monitor_spans_refused_total", {"receiver": "http", "reason": "pending_bytes"}) == 40 - len(
        accepted
    )
    assert sample("agent_monitor_bytes_pending", {}) == assembler.bytes_held
    assert sample("agent_monitor_spans_received_total", {"receiver": "http"}) == len(accepted)
