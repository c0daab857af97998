"""Send agent traces with the real OpenTelemetry SDK OTLP gRPC exporter, one export call per batch, and write the
trace ids of each batch the daemon acknowledged (the call returned SUCCESS) to a file, one per line (run as a
separate process). A batch that fails (the daemon killed or restarting) is exported again until acknowledged,
as a Collector's retry would; every trace has one failing tool call (one failing `no_tool_errors` result).

    python ack_sender.py --endpoint 127.0.0.1:4317 --traces 500 --batch 10 --acked acked.txt [--stop-file F]
    python ack_sender.py --protocol http --endpoint http://127.0.0.1:4318 --traces 500 --acked acked.txt
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode

RETRY_SECONDS = 0.2


def make_exporter(protocol: str, endpoint: str):  # type: ignore[no-untyped-def]
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter(endpoint=endpoint, insecure=True, timeout=5)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

    return HttpExporter(endpoint=f"{endpoint}/v1/traces", timeout=5)


def make_spans(provider: TracerProvider, memory: InMemorySpanExporter, traces: int) -> list:
    """`traces` finished agent traces (agent, chat, failing tool call)."""
    tracer = provider.get_tracer("kill-test-agent", "1.0")
    for _ in range(traces):
        with tracer.start_as_current_span("invoke_agent travel_agent") as agent:
            agent.set_attribute("gen_ai.operation.name", "invoke_agent")
            with tracer.start_as_current_span("chat gpt-4o-mini", kind=SpanKind.CLIENT) as llm:
                llm.set_attribute("gen_ai.operation.name", "chat")
                llm.set_attribute("gen_ai.request.model", "gpt-4o-mini")
            with tracer.start_as_current_span("execute_tool get_weather") as tool:
                tool.set_attribute("gen_ai.operation.name", "execute_tool")
                tool.set_attribute("gen_ai.tool.name", "get_weather")
                tool.set_status(Status(StatusCode.ERROR, "weather service down"))
    spans = list(memory.get_finished_spans())
    memory.clear()
    return spans


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--endpoint", required=True, help="host:port (gRPC) or http://host:port (HTTP)")
    parser.add_argument("--protocol", choices=["grpc", "http"], default="grpc")
    parser.add_argument("--traces", type=int, required=True)
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--acked", required=True)
    parser.add_argument("--deadline", type=float, default=600.0, help="seconds before giving up")
    parser.add_argument("--stop-file", help="stop (after the batch being sent) once this file exists")
    args = parser.parse_args()
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource({"service.name": "kill-test"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    exporter = make_exporter(args.protocol, args.endpoint)
    deadline = time.monotonic() + args.deadline
    sent = 0
    with open(args.acked, "a", encoding="ascii") as acked:
        while sent < args.traces and not (args.stop_file and Path(args.stop_file).exists()):
            spans = make_spans(provider, memory, min(args.batch, args.traces - sent))
            ids = sorted({f"{span.context.trace_id:032x}" for span in spans})
            while exporter.export(spans) is not SpanExportResult.SUCCESS:
                if time.monotonic() > deadline:
                    print(f"gave up after {sent} traces", flush=True)
                    return 1
                time.sleep(RETRY_SECONDS)
            acked.write("".join(f"{trace_id}\n" for trace_id in ids))
            acked.flush()
            sent += len(ids)
    print(f"acknowledged {sent} traces", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
