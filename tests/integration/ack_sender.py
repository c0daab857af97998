"""Send agent traces with the real OpenTelemetry SDK OTLP gRPC exporter, one export call per batch, and write the
trace ids of each batch the daemon acknowledged (the call returned SUCCESS) to a file, one per line (run as a
separate process). A batch that fails (the daemon killed or restarting) is exported again until acknowledged,
as a Collector's retry would; every trace has one failing tool call (one failing `no_tool_errors` result).
With `--give-up` a failed batch is not sent again (the SDK exporter's own retries were its only chance, as with a
BatchSpanProcessor); `--stats` writes what happened as JSON: batches acknowledged and given up, and the exporter's
own retries (its "Transient error ... retrying" warnings: throttled answers it backed off from) and the longest
export call.

    python ack_sender.py --endpoint 127.0.0.1:4317 --traces 500 --batch 10 --acked acked.txt [--stop-file F]
    python ack_sender.py --protocol http --endpoint http://127.0.0.1:4318 --traces 500 --acked acked.txt
    python ack_sender.py ... --interval 0.05 --timeout 20 --give-up --stats stats.json
"""

from __future__ import annotations

import argparse
import json
import logging
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


class RetryCounter(logging.Handler):
    """Counts the SDK exporters' "Transient error ..., retrying in Ns" warnings (HTTP and gRPC alike). The gRPC
    exporter's logger drops a warning identical to a recent one (a `DuplicateFilter`): taken off, to see each."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.retries = 0

    def attach(self) -> None:
        for logger in [logging.getLogger(name) for name in logging.root.manager.loggerDict]:
            if logger.name.startswith("opentelemetry.exporter"):
                logger.filters = [f for f in logger.filters if type(f).__name__ != "DuplicateFilter"]
        logging.getLogger("opentelemetry").addHandler(self)

    def emit(self, record: logging.LogRecord) -> None:
        if str(record.msg).startswith("Transient error"):
            self.retries += 1


def make_exporter(protocol: str, endpoint: str, timeout: float = 5):  # type: ignore[no-untyped-def]
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter(endpoint=endpoint, insecure=True, timeout=timeout)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

    return HttpExporter(endpoint=f"{endpoint}/v1/traces", timeout=timeout)


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
    parser.add_argument("--interval", type=float, default=0.0, help="seconds between batches")
    parser.add_argument("--timeout", type=float, default=5.0, help="the SDK exporter's timeout (all its retries)")
    parser.add_argument("--give-up", action="store_true", help="never send a failed batch again")
    parser.add_argument("--stats", help="write the batches acknowledged, given up and the exporter's retries here")
    args = parser.parse_args()
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource({"service.name": "kill-test"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    exporter = make_exporter(args.protocol, args.endpoint, args.timeout)
    counter = RetryCounter()
    counter.attach()
    deadline = time.monotonic() + args.deadline
    sent = given_up = batches = 0
    longest = 0.0  # seconds of the longest first export call (its retries included)
    with open(args.acked, "a", encoding="ascii") as acked:
        while sent < args.traces and not (args.stop_file and Path(args.stop_file).exists()):
            spans = make_spans(provider, memory, min(args.batch, args.traces - sent))
            ids = sorted({f"{span.context.trace_id:032x}" for span in spans})
            began = time.monotonic()
            acknowledged = exporter.export(spans) is SpanExportResult.SUCCESS
            longest = max(longest, time.monotonic() - began)
            while not acknowledged and not args.give_up:
                if time.monotonic() > deadline:
                    print(f"gave up after {sent} traces", flush=True)
                    return 1
                time.sleep(RETRY_SECONDS)
                acknowledged = exporter.export(spans) is SpanExportResult.SUCCESS
            if acknowledged:
                acked.write("".join(f"{trace_id}\n" for trace_id in ids))
                acked.flush()
                batches += 1
                sent += len(ids)
            else:
                given_up += 1
            time.sleep(args.interval)
    if args.stats:
        stats = {"acknowledged": batches, "given_up": given_up, "exporter_retries": counter.retries}
        stats["longest_export_seconds"] = round(longest, 2)
        Path(args.stats).write_text(json.dumps(stats))
    print(f"acknowledged {sent} traces", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
