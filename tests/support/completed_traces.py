"""Completed traces for engine tests: the recorded corpus and the bench's synthetic agent traces."""

from __future__ import annotations

import time
from typing import Any

from evaluators.traces import read_paths
from evaluators.traces.otlp_proto import decode_traces_protobuf
from monitor.engine.assembler import CompletedTrace, TraceAssembler
from tests.bench.synthetic import bench_trace_spans, export_request
from tests.conftest import corpus_scenarios


def pop_due(assembler: TraceAssembler, now: float | None = None, limit: int | None = None) -> list[CompletedTrace]:
    """What the daemon's completion loop takes from the assembler at `now`: `collect_due` then `take_due`."""
    assembler.collect_due(now)
    return assembler.take_due(limit)


def completed_from_batch(spans: list, logs: list | None = None) -> list[CompletedTrace]:
    """Every trace of the spans (and log records) as the assembler completes them."""
    assembler = TraceAssembler(quiet_period=0.001)
    assembler.add_logs(logs or [])
    assembler.add(spans)
    return pop_due(assembler, now=time.monotonic() + 1000)


def corpus_traces() -> list[CompletedTrace]:
    batch = read_paths(corpus_scenarios())
    return completed_from_batch(batch.spans, batch.logs)


def synthetic_requests(traces: int, per_request: int = 50, first: int = 1) -> list[bytes]:
    """OTLP protobuf export requests of `traces` 7-span agent traces with ids first, first+1, ..."""
    requests = []
    for start in range(first, first + traces, per_request):
        spans = []
        for n in range(start, min(start + per_request, first + traces)):
            spans += bench_trace_spans(n.to_bytes(16, "big"), time.time_ns() - 10**9, n)
        requests.append(export_request(spans).SerializeToString())
    return requests


def synthetic_traces(traces: int) -> list[CompletedTrace]:
    spans = [s for r in synthetic_requests(traces) for s in decode_traces_protobuf(r).spans]
    return completed_from_batch(spans)


def metric_total(daemon: Any, name: str, **labels: str) -> float:
    """The sum of an in-process daemon's samples of `name` with these labels (any others)."""
    return sum(
        s.value
        for family in daemon.metrics.registry.collect()
        for s in family.samples
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
    )
