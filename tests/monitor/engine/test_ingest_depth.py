"""The daemon counts attributes the decoders drop for nesting too deep, and keeps their spans."""

from __future__ import annotations

import pytest

from evaluators.traces.otlp_depth import MAX_VALUE_DEPTH
from monitor.consumer import Outcome
from monitor.engine.assembler import TraceAssembler
from monitor.engine.ingest import Ingestor
from monitor.metrics import MetricsExporter
from tests.evaluators.traces.test_decoders_depth import (
    js_attr,
    js_request,
    js_span,
    js_text,
    js_value,
    pb_attr,
    pb_request,
    pb_span,
    pb_text,
    pb_value,
)


@pytest.mark.parametrize("encoding", ["protobuf", "json"])
def test_an_over_deep_attribute_is_counted_and_its_span_kept(encoding: str) -> None:
    metrics = MetricsExporter()
    assembler = TraceAssembler()
    ingestor = Ingestor(assembler)
    if encoding == "protobuf":
        deep, plain = pb_attr("deep", pb_value(MAX_VALUE_DEPTH + 5, "kvlist")), pb_attr("ok", pb_text("x"))
        payload = pb_request([pb_span(0, [deep, plain]), pb_span(1, [plain])])
    else:
        deep, plain = js_attr("deep", js_value(MAX_VALUE_DEPTH + 5, "kvlist")), js_attr("ok", js_text("x"))
        payload = js_request([js_span(0, [deep, plain]), js_span(1, [plain])]).encode()

    outcome = ingestor.ingest(payload, receiver="http", encoding=encoding)
    metrics.intake.receiver("http").ingested(outcome)  # what the receiver counts from the answer

    assert outcome.dropped_attributes == 1

    assert outcome.outcome is Outcome.ACCEPTED and outcome.accepted == 2
    dropped = metrics.registry.get_sample_value(
        "agent_monitor_attributes_dropped_total", {"receiver": "http", "reason": "too_deep"}
    )
    assert dropped == 1
    assert assembler.spans_pending == 2
