"""Send seeded traces (tests/support/seeded_traces.py) through the real OpenTelemetry SDK OTLP exporter, as an agent
emitting the OTel GenAI convention would (run as a separate process):

    python seeded_sender.py --endpoint 127.0.0.1:4317 --service shop --concentrate value --seed 3 --traces 6000

Each trace: an `invoke_agent` root span carrying the 20 noise dimensions as attributes (`noise00`...), a `chat`
span of its model and an `execute_tool` span of its tool under it; a failed trace's root span has status ERROR (so
`error_free` fails it, and no tool failed). Prints `exported N` and exits non-zero when an export failed.
"""

from __future__ import annotations

import argparse
import secrets
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from tests.support.seeded_traces import seeded_traces

SCOPE = InstrumentationScope("seeded-agent", "1.0")


def _span(name: str, trace_id: int, span_id: int, parent: int | None, start: int, attributes: dict,
          resource: Resource, failed: bool = False) -> ReadableSpan:  # fmt: skip
    context = SpanContext(trace_id, span_id, False, TraceFlags(1))
    parent_context = SpanContext(trace_id, parent, False, TraceFlags(1)) if parent else None
    status = Status(StatusCode.ERROR, "the agent failed (seeded)") if failed else Status(StatusCode.OK)
    return ReadableSpan(name=name, context=context, parent=parent_context, resource=resource, attributes=attributes,
                        kind=SpanKind.INTERNAL, status=status, start_time=start, end_time=start + 5_000_000,
                        instrumentation_scope=SCOPE)  # fmt: skip


def spans_of(service: str, concentrate: str | None, seed: int, traces: int) -> list[ReadableSpan]:
    resource = Resource({"service.name": service})
    now = time.time_ns()
    out = []
    for pairs, failed in seeded_traces(seed, traces, concentrate).traces:  # type: ignore[arg-type]
        values = dict(pairs)
        trace_id, root, chat, tool = (int(secrets.token_hex(n), 16) for n in (16, 8, 8, 8))
        noise = {k: v for k, v in values.items() if k.startswith("noise")}
        agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "helper", **noise}
        out.append(_span("invoke_agent helper", trace_id, root, None, now, agent, resource, failed))
        model = {"gen_ai.operation.name": "chat", "gen_ai.request.model": values["model"],
                 "gen_ai.provider.name": "gcp.gemini", "gen_ai.usage.input_tokens": 10,
                 "gen_ai.usage.output_tokens": 5}  # fmt: skip
        out.append(_span(f"chat {values['model']}", trace_id, chat, root, now + 1000, model, resource))
        called = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": values["tool"]}
        out.append(_span(f"execute_tool {values['tool']}", trace_id, tool, root, now + 2000, called, resource))
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--service", required=True)
    parser.add_argument("--concentrate", choices=["value", "pair", "none"], required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--traces", type=int, required=True)
    args = parser.parse_args()
    concentrate = None if args.concentrate == "none" else args.concentrate
    spans = spans_of(args.service, concentrate, args.seed, args.traces)
    exporter = OTLPSpanExporter(endpoint=args.endpoint, insecure=True, timeout=30)
    failures = 0
    for start in range(0, len(spans), 1500):  # whole traces per request (3 spans each)
        failures += exporter.export(spans[start : start + 1500]) is not SpanExportResult.SUCCESS
    print(f"exported {len(spans)} spans failures={failures}", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
