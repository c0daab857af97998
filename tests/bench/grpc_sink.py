"""Bare OTLP/gRPC sink for the throughput baseline (run as its own process).

    python grpc_sink.py [--port 0] [--max-seconds 600]

A grpc.aio server whose TraceService/Export parses the ExportTraceServiceRequest, walks every
attribute of every span (counting them) and answers OK: the floor any receiver pays. Prints
`listening PORT` once serving, and `stats {json}` when it stops (SIGTERM/SIGINT or --max-seconds).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import time

import grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"
_OK = ExportTraceServiceResponse().SerializeToString()


class Counts:
    def __init__(self) -> None:
        self.requests = 0
        self.spans = 0
        self.attributes = 0
        self.busy_seconds = 0.0


def _walk(request: ExportTraceServiceRequest) -> tuple[int, int]:
    """(spans, attributes) of a request, touching every attribute key and value."""
    spans = attributes = 0
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans += 1
                for attribute in span.attributes:
                    if attribute.key and attribute.value.WhichOneof("value") is not None:
                        attributes += 1
    return spans, attributes


def _handler(counts: Counts) -> grpc.GenericRpcHandler:
    async def export(payload: bytes, context: grpc.aio.ServicerContext) -> bytes:
        started = time.perf_counter()
        spans, attributes = _walk(ExportTraceServiceRequest.FromString(payload))
        counts.requests += 1
        counts.spans += spans
        counts.attributes += attributes
        counts.busy_seconds += time.perf_counter() - started
        return _OK

    method = grpc.unary_unary_rpc_method_handler(export, request_deserializer=None, response_serializer=None)
    return grpc.method_handlers_generic_handler(SERVICE, {"Export": method})


async def serve(port: int, max_seconds: float) -> Counts:
    counts = Counts()
    server = grpc.aio.server(options=[("grpc.max_receive_message_length", 16 * 1024 * 1024)])
    server.add_generic_rpc_handlers((_handler(counts),))
    bound = server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    print(f"listening {bound}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), timeout=max_seconds)
    await server.stop(grace=2)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--max-seconds", type=float, default=600.0, help="stop by itself after this long")
    args = parser.parse_args()
    counts = asyncio.run(serve(args.port, args.max_seconds))
    print("stats " + json.dumps(vars(counts)), flush=True)


if __name__ == "__main__":
    main()
