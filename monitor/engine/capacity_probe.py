"""A first estimate of evaluation capacity, measured when a worker starts.

Admission control needs to know how many spans per second the workers evaluate before the first real batch
is back (a quiet period later). Each worker times what it does with a batch (evaluators, metrics tally, result
rows into an in-memory store) on a typical agent trace (an OTel GenAI agent span with three model calls and
three tool calls, messages as JSON, 7 spans) a few times; real batches then correct the estimate. The spans are
raw, as received over OTLP/protobuf (evaluators.traces.raw_spans), so their decoding, which the worker does, counts.
"""

from __future__ import annotations

import json
import math
import time

from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from evaluators.traces.raw_spans import RawSpan, ReceivedSpan
from evaluators.traces.records import SpanRecord
from monitor.engine.assembler import CompletedTrace
from monitor.engine.batch_run import BatchRun
from monitor.engine.trace_evaluation import TraceEvaluator
from monitor.store.sqlite import ResultStore

ROUNDS = 8
REPEATS = 3
MS = 1_000_000


def typical_trace(number: int) -> CompletedTrace:
    """A 7-span agent trace: agent → (LLM call → tool call) × 3."""
    trace_id = f"{number + 1:032x}"
    root = f"{1:016x}"
    start = time.time_ns() - 10**9
    spans = [
        SpanRecord(
            trace_id,
            root,
            "",
            "invoke_agent travel_agent",
            1,
            start,
            start + 300 * MS,
            attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "travel_agent"},
            resource_attributes={"service.name": "capacity-probe"},
        )
    ]
    for step in range(3):
        at = start + step * 90 * MS
        messages = [
            {"role": "system", "parts": [{"type": "text", "content": "You are a helpful travel assistant."}]},
            {"role": "user", "parts": [{"type": "text", "content": f"Step {step}: the weather in Paris?"}]},
        ]
        output = [{"role": "assistant", "parts": [{"type": "text", "content": "Light rain, 18°C."}]}]
        llm = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.usage.input_tokens": 120 + step,
            "gen_ai.usage.output_tokens": 30,
            "gen_ai.input.messages": json.dumps(messages),
            "gen_ai.output.messages": json.dumps(output),
        }
        tool = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "get_weather",
            "gen_ai.tool.call.arguments": json.dumps({"city": "Paris"}),
            "gen_ai.tool.call.result": json.dumps({"temperature_c": 18}),
        }
        spans.append(SpanRecord(trace_id, f"{10 + step:016x}", root, "chat", 3, at, at + 40 * MS, attributes=llm))
        spans.append(
            SpanRecord(
                trace_id, f"{20 + step:016x}", root, "execute_tool", 1, at + 45 * MS, at + 50 * MS, attributes=tool
            )
        )
    resource = {"service.name": "capacity-probe"}
    now = time.monotonic()
    return CompletedTrace(trace_id, [_raw(span, resource) for span in spans], "quiet", now, now, [], now)


def _raw(record: SpanRecord, resource: dict) -> ReceivedSpan:
    """The record as the receivers keep a span received over OTLP/protobuf (string and int attributes)."""
    span = Span(
        trace_id=bytes.fromhex(record.trace_id),
        span_id=bytes.fromhex(record.span_id),
        parent_span_id=bytes.fromhex(record.parent_span_id),
        name=record.name,
        kind=record.kind,  # type: ignore[arg-type]  # the enum's int
        start_time_unix_nano=record.start_time_unix_nano,
        end_time_unix_nano=record.end_time_unix_nano,
    )
    for key, value in record.attributes.items():
        text = isinstance(value, str)
        span.attributes.add(key=key, value=AnyValue(string_value=value) if text else AnyValue(int_value=value))
    payload = span.SerializeToString()
    return RawSpan(
        record.trace_id, record.span_id, record.parent_span_id, record.kind, record.end_time_unix_nano, payload,
        resource, "", "", "capacity-probe",
    )  # fmt: skip


def spans_per_second(evaluator: TraceEvaluator, rounds: int = ROUNDS) -> float:
    """Spans per second one worker evaluates on typical traces (0.0 when there is nothing to measure).

    Only the builtin evaluators run on the made-up traces: a user's evaluator may have side effects (write a
    file, call a service) that a trace nobody sent must not trigger. Real batches add its cost.
    """
    builtins = [c for c in evaluator.evaluators if type(c.evaluator).__module__.startswith("evaluators.builtins.")]
    evaluator = TraceEvaluator(
        builtins,
        timeout_seconds=evaluator.timeout_seconds,
        mode=evaluator.mode,
        store_results=evaluator.store_results,  # what the store costs counts too
        max_steps=evaluator.max_steps,
        session_attributes=evaluator.session_attributes,
        dimension_settings=evaluator.dimension_settings,  # and what the dimensions cost
    )
    batch = [typical_trace(n) for n in range(rounds)]
    spans = sum(len(t.spans) for t in batch)
    store = ResultStore(":memory:")
    try:
        run = BatchRun(evaluator, store.write)
        run(batch[:2])  # warm-up: first calls compile patterns and fill caches
        best = math.inf
        for _ in range(REPEATS):  # the best of a few: start-up is a noisy time to measure (imports, other workers)
            best = min(best, run(batch).seconds)
    finally:
        store.close()
    return spans / best if best > 0 else 0.0
