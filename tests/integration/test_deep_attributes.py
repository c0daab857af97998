"""An attribute nested too deep, received over OTLP/gRPC by the real daemon: its span's attributes are decoded by
the evaluation worker (raw spans), which leaves the attribute out; the daemon still counts it under the receiver
in `agent_monitor_attributes_dropped_total` and evaluates the trace with its other attributes."""

from __future__ import annotations

import grpc
import pytest

from evaluators.traces.otlp_depth import MAX_VALUE_DEPTH
from tests.evaluators.traces.test_decoders_depth import pb_attr, pb_request, pb_span, pb_text, pb_value

pytestmark = pytest.mark.integration

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


def test_an_attribute_too_deep_for_the_worker_is_counted_under_its_receiver(daemon_factory) -> None:
    daemon = daemon_factory({"evaluation": {"workers": 2}})
    deep = pb_attr("deep", pb_value(MAX_VALUE_DEPTH + 3, "array"))  # parses in C: only a walk finds it
    end = b"\x41" + (1_700_000_000_000_000_000).to_bytes(8, "little")  # end_time_unix_nano (fixed64): the root ended
    span = pb_span(0, [deep, pb_attr("ok", pb_text("x"))]) + end
    with grpc.insecure_channel(f"127.0.0.1:{daemon.grpc_port}") as channel:
        export = channel.unary_unary(EXPORT)
        export(pb_request([span]), timeout=10)
    evaluated = lambda: daemon.value("agent_monitor_traces_evaluated_total") >= 1  # noqa: E731
    assert daemon.wait_for_condition(evaluated, timeout=30), daemon.output()[-3000:]
    dropped = lambda: daemon.value("agent_monitor_attributes_dropped_total", receiver="grpc", reason="too_deep")  # noqa: E731
    assert daemon.wait_for_condition(lambda: dropped() == 1, timeout=10), daemon.output()[-3000:]
    assert daemon.value("agent_monitor_spans_received_total", receiver="grpc") == 1
