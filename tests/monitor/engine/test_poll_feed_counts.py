"""A span feed's spans are counted like a receiver's, under `receiver="poll"` (its own telemetry)."""

from __future__ import annotations

from evaluators.traces.records import SpanRecord
from monitor.engine.assembler import TraceAssembler
from monitor.engine.poll_intake import FEED_RECEIVER, DaemonSink
from monitor.engine.pool import EvaluationPool, thread_slot
from monitor.engine.trace_evaluation import TraceEvaluator
from monitor.metrics import MetricsExporter


def test_feed_counts_accepted_and_per_trace_cap_spans_under_the_poll_receiver() -> None:
    metrics = MetricsExporter()
    pool = EvaluationPool(thread_slot(TraceEvaluator([])), lambda outcomes: None, lambda r, n: None, queue_size=4)
    sink = DaemonSink(TraceAssembler(max_spans_per_trace=2), pool, metrics.intake.receiver(FEED_RECEIVER))
    spans = [
        SpanRecord("ab" * 16, f"{i + 1:016x}", "", f"s{i}", start_time_unix_nano=1, end_time_unix_nano=2)
        for i in range(3)
    ]
    sink.feed(spans, [])
    sample = metrics.registry.get_sample_value
    assert FEED_RECEIVER == "poll"
    assert sample("agent_monitor_spans_received_total", {"receiver": "poll"}) == 2
    assert sample("agent_monitor_spans_refused_total", {"receiver": "poll", "reason": "per_trace_cap"}) == 1
