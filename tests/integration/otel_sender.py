"""Send spans with the real OpenTelemetry SDK OTLP exporters (run as a separate process).

    python otel_sender.py --protocol grpc --endpoint 127.0.0.1:4317 corpus DIR [DIR...]
    python otel_sender.py --protocol http --endpoint http://127.0.0.1:4318 synthetic --traces 5
    python otel_sender.py --protocol grpc --endpoint 127.0.0.1:4317 variant DIR --copies 50 --version 1.5 --fail-tools

`corpus` re-exports saved corpus spans through the exporter (converted to SDK ReadableSpans);
`synthetic` creates agent traces with a real TracerProvider and BatchSpanProcessor.
Prints one line `exported N` per export call result and exits non-zero when an export failed.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import secrets
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExportResult
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from evaluators.traces import build_trace, read_paths
from evaluators.traces.records import SpanRecord


def make_exporter(protocol: str, endpoint: str, headers: dict[str, str], compression: str | None):
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.exporter import Compression
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        comp = Compression.Gzip if compression == "gzip" else None
        return OTLPSpanExporter(endpoint=endpoint, insecure=True, headers=headers, compression=comp, timeout=30)
    from opentelemetry.exporter.otlp.proto.http import Compression
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    comp = Compression.Gzip if compression == "gzip" else Compression.NoCompression
    return OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces", headers=headers, compression=comp, timeout=30)


def _primitive(value):
    if isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, list) and all(isinstance(v, (str, bool, int, float)) for v in value):
        return value
    return str(value)


def readable(record: SpanRecord) -> ReadableSpan:
    context = SpanContext(int(record.trace_id, 16), int(record.span_id, 16), False, TraceFlags(1))
    parent = (
        SpanContext(int(record.trace_id, 16), int(record.parent_span_id, 16), False, TraceFlags(1))
        if record.parent_span_id
        else None
    )
    return ReadableSpan(
        name=record.name,
        context=context,
        parent=parent,
        resource=Resource({k: _primitive(v) for k, v in record.resource_attributes.items()}),
        attributes={k: _primitive(v) for k, v in record.attributes.items()},
        events=[
            Event(e.name, {k: _primitive(v) for k, v in e.attributes.items()}, e.time_unix_nano) for e in record.events
        ],
        kind=SpanKind(record.kind - 1 if record.kind > 0 else 0),
        status=Status(StatusCode(record.status_code), record.status_message or None),
        start_time=record.start_time_unix_nano,
        end_time=record.end_time_unix_nano,
        instrumentation_scope=InstrumentationScope(record.scope_name or "corpus", record.scope_version or None),
    )


def send_logs(protocol: str, endpoint: str, headers: dict[str, str], directories: list[str]) -> int:
    """Raw `logs_*.pb` exports of the corpus (content and per-call usage that live only in log records)."""
    sent = 0
    for directory in directories:
        for path in sorted(Path(directory).glob("logs_*.pb")):
            payload = path.read_bytes()
            if protocol == "grpc":
                import grpc

                with grpc.insecure_channel(endpoint) as channel:
                    call = channel.unary_unary("/opentelemetry.proto.collector.logs.v1.LogsService/Export")
                    call(payload, timeout=10, metadata=tuple(headers.items()))
            else:
                import urllib.request

                request = urllib.request.Request(
                    f"{endpoint}/v1/logs",
                    data=payload,
                    headers={"Content-Type": "application/x-protobuf", **headers},
                    method="POST",
                )
                urllib.request.urlopen(request, timeout=10).close()
            sent += 1
    return sent


def send_corpus(exporter, directories: list[str], batch: int) -> int:
    spans = [readable(s) for s in read_paths(directories).spans]
    failures = 0
    for start in range(0, len(spans), batch):
        result = exporter.export(spans[start : start + batch])
        print(f"exported {len(spans[start : start + batch])} {result.name}", flush=True)
        failures += result is not SpanExportResult.SUCCESS
    return failures


MODEL_KEYS = ("gen_ai.request.model", "gen_ai.response.model", "llm.model_name")


def variant_copies(
    records: list[SpanRecord], copies: int, version: str, fail_tools: bool, model: str | None = None
) -> list[SpanRecord]:
    """`copies` copies of every trace of `records` under fresh trace and span ids, with the resource's
    service.version set to `version`; with `fail_tools`, every tool call's span (as the views find them) fails;
    with `model`, every span's model attributes (MODEL_KEYS) name it."""
    by_trace: dict[str, list[SpanRecord]] = {}
    for record in records:
        by_trace.setdefault(record.trace_id, []).append(record)
    tools = {
        trace_id: {tool.span_id for tool in build_trace(spans, trace_id).get_tool_calls()}
        for trace_id, spans in by_trace.items()
    }
    out = []
    for _ in range(copies):
        for trace_id, spans in by_trace.items():
            new_trace = secrets.token_hex(16)
            ids = {span.span_id: secrets.token_hex(8) for span in spans}
            for span in spans:
                copy = dataclasses.replace(
                    span,
                    trace_id=new_trace,
                    span_id=ids[span.span_id],
                    parent_span_id=ids.get(span.parent_span_id, ""),
                    resource_attributes={**span.resource_attributes, "service.version": version},
                )
                if model is not None:
                    copy.attributes = {k: model if k in MODEL_KEYS else v for k, v in span.attributes.items()}
                if fail_tools and span.span_id in tools[trace_id]:
                    copy.status_code, copy.status_message = 2, "tool failed (injected)"
                out.append(copy)
    return out


def send_variant(
    exporter, directories: list[str], copies: int, version: str, fail_tools: bool, model: str | None = None
) -> int:
    """The corpus traces of `directories` as `copies` traces each of the agent version `version` (and `model`)."""
    records = read_paths(directories).spans
    spans = [readable(s) for s in variant_copies(records, copies, version, fail_tools, model)]
    failures = 0
    for start in range(0, len(spans), 512):
        result = exporter.export(spans[start : start + 512])
        failures += result is not SpanExportResult.SUCCESS
    print(f"exported {len(spans)} spans of version {version} failures={failures}", flush=True)
    return failures


class CountingExporter:
    """Wraps an exporter to count the batches it could not deliver (the SDK only logs them)."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.failed_batches = 0

    def export(self, spans):
        result = self.inner.export(spans)
        if result is not SpanExportResult.SUCCESS:
            self.failed_batches += 1
        return result

    def shutdown(self):
        return self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


def request_id(length: int = 12) -> str:
    """A fresh hex id of `length` digits that mixes digits and letters, as a request id looks and as signature masking
    reads it (`<hex>`): an all-digit draw (one in 280 at 12 digits) would read as a number (`<num>`) and make the
    same failure a second signature."""
    for _ in range(1000):  # bounded: a draw lacks a digit or a letter with probability < 0.4 %
        drawn = secrets.token_hex(length // 2)
        if any(c.isdigit() for c in drawn) and any(c.isalpha() for c in drawn):
            return drawn
    raise RuntimeError("no hex id mixing digits and letters in 1000 draws")


def send_synthetic(
    exporter,
    traces: int,
    service: str,
    fail_every: int,
    max_queue: int = 2048,
    version: str | None = None,
    question: str = "Weather in Paris?",
    answer: str = "It is sunny in Paris.",
    tool_name: str = "get_weather",
    tool_error: str | None = None,
) -> int:
    """`traces` agent traces; `question` and `answer` may hold `{i}`, the trace's index; `version` is the
    resource's service.version. A failing tool call records `tool_error` (when given) as a RuntimeError exception
    event; it may hold `{i}`, `{id}` (a fresh hex id, `request_id`) and `{amount}` (varying with the index)."""
    exporter = CountingExporter(exporter)
    resource = {"service.name": service, **({"service.version": version} if version else {})}
    provider = TracerProvider(resource=Resource(resource))
    processor = BatchSpanProcessor(
        exporter, max_queue_size=max_queue, max_export_batch_size=256, schedule_delay_millis=200
    )
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("synthetic-agent", "1.0")
    for index in range(traces):
        failing = fail_every > 0 and index % fail_every == 0
        with tracer.start_as_current_span("invoke_agent travel_agent") as agent:
            agent.set_attribute("gen_ai.operation.name", "invoke_agent")
            agent.set_attribute("gen_ai.agent.name", "travel_agent")
            for step in range(2):
                with tracer.start_as_current_span("chat gpt-4o-mini", kind=SpanKind.CLIENT) as llm:
                    llm.set_attribute("gen_ai.operation.name", "chat")
                    llm.set_attribute("gen_ai.request.model", "gpt-4o-mini")
                    llm.set_attribute("gen_ai.usage.input_tokens", 100 + step)
                    llm.set_attribute("gen_ai.usage.output_tokens", 20)
                    text = question.format(i=index)
                    llm.set_attribute(
                        "gen_ai.input.messages",
                        json.dumps([{"role": "user", "parts": [{"type": "text", "content": text}]}]),
                    )
                    reply = {"type": "text", "content": answer.format(i=index)}
                    llm.set_attribute(
                        "gen_ai.output.messages",
                        json.dumps([{"role": "assistant", "parts": [reply], "finish_reason": "stop"}]),
                    )
                with tracer.start_as_current_span(f"execute_tool {tool_name}") as tool:
                    tool.set_attribute("gen_ai.operation.name", "execute_tool")
                    tool.set_attribute("gen_ai.tool.name", tool_name)
                    tool.set_attribute("gen_ai.tool.call.arguments", '{"city": "Paris"}')
                    if failing and tool_error is not None:
                        text = tool_error.format(i=index, id=request_id(), amount=f"{17.5 * (index + 3):.2f}")
                        tool.record_exception(RuntimeError(text))
                        tool.set_status(Status(StatusCode.ERROR, f"RuntimeError: {text}"))
                    elif failing:
                        tool.set_status(Status(StatusCode.ERROR, "weather service down"))
    ok = provider.force_flush(120_000) and exporter.failed_batches == 0
    provider.shutdown()
    print(f"exported synthetic {traces} {'SUCCESS' if ok else 'FAILURE'}", flush=True)
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--protocol", choices=["grpc", "http"], required=True)
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--token")
    parser.add_argument("--compression", choices=["gzip", "none"], default="none")
    sub = parser.add_subparsers(dest="mode", required=True)
    corpus = sub.add_parser("corpus")
    corpus.add_argument("dirs", nargs="+")
    corpus.add_argument("--batch", type=int, default=512)
    corpus.add_argument("--with-logs", action="store_true", help="send the corpus log records first")
    variant = sub.add_parser("variant", help="copies of corpus traces as one agent version")
    variant.add_argument("dirs", nargs="+")
    variant.add_argument("--copies", type=int, default=10)
    variant.add_argument("--version", required=True, help="the resource's service.version")
    variant.add_argument("--fail-tools", action="store_true", help="every tool call's span fails")
    variant.add_argument("--model", help="the model every LLM call names")
    synthetic = sub.add_parser("synthetic")
    synthetic.add_argument("--traces", type=int, default=5)
    synthetic.add_argument("--max-queue", type=int, default=2048, help="the SDK's span queue (it drops beyond)")
    synthetic.add_argument("--service", default="synthetic-agent")
    synthetic.add_argument("--fail-every", type=int, default=0)
    synthetic.add_argument("--version", help="the resource's service.version")
    synthetic.add_argument("--question", default="Weather in Paris?", help="the user's question; {i}: the index")
    synthetic.add_argument("--answer", default="It is sunny in Paris.", help="the agent's answer; {i}: the index")
    synthetic.add_argument("--tool", default="get_weather", help="the tool's name")
    synthetic.add_argument("--tool-error", help="a failing tool's RuntimeError message; {i}, {id}, {amount} vary")
    args = parser.parse_args()
    headers = {"authorization": f"Bearer {args.token}"} if args.token else {}
    exporter = make_exporter(args.protocol, args.endpoint, headers, args.compression)
    started = time.monotonic()
    if args.mode == "corpus":
        if args.with_logs:
            print(f"sent {send_logs(args.protocol, args.endpoint, headers, args.dirs)} log exports", flush=True)
        failures = send_corpus(exporter, args.dirs, args.batch)
    elif args.mode == "variant":
        failures = send_variant(exporter, args.dirs, args.copies, args.version, args.fail_tools, args.model)
    else:
        failures = send_synthetic(
            exporter, args.traces, args.service, args.fail_every, args.max_queue,
            args.version, args.question, args.answer, args.tool, args.tool_error,
        )  # fmt: skip
    print(f"done in {time.monotonic() - started:.2f}s failures={failures}", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
