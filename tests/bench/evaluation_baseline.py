"""The same-run baseline for the daemon's throughput: one thread evaluating the bench's traces, nothing else.

The default evaluators over the load generator's 7-span traces, already decoded and assembled, written to an
in-memory store: the pure evaluation path (views, evaluators, rows, tally) with no ingest, no hand-offs and no
other process. `cores × this rate` is what the daemon would reach if evaluation were all it did, so the daemon's
evaluated traces/s over it is a figure that does not move with the host's speed, unlike traces/s alone.
"""

from __future__ import annotations

import os
import statistics
import time
from collections import defaultdict

from evaluators.traces.otlp_proto import decode_traces_protobuf
from monitor.config import MonitorConfig
from monitor.engine.assembler import CompletedTrace
from monitor.engine.batch_run import BatchRun
from monitor.engine.evaluator_setup import build_evaluators
from monitor.engine.trace_evaluation import TraceEvaluator
from monitor.store.sqlite import ResultStore
from tests.bench.synthetic import bench_trace_spans, export_request

TRACES = 400
REPEATS = 9


def bench_traces(count: int = TRACES) -> list[CompletedTrace]:
    start = time.time_ns() - 3_000_000_000
    spans = [span for i in range(count) for span in bench_trace_spans(os.urandom(16), start, i)]
    grouped: dict[str, list] = defaultdict(list)
    for record in decode_traces_protobuf(export_request(spans).SerializeToString()).spans:
        grouped[record.trace_id].append(record)
    now = time.monotonic()
    return [CompletedTrace(trace_id, records, "quiet", now, now, [], now) for trace_id, records in grouped.items()]


def single_thread_rate() -> float:
    """Traces per second one thread evaluates: the median of REPEATS batches, each on fresh records. The median,
    not the best: the daemon's rate is an average over a run on the same host, whose speed moves (a shared VM
    measured 470-840 traces/s here from one minute to the next), and the best batch would set the bar at its
    fastest moment."""
    built, problems = build_evaluators(MonitorConfig().evaluator_entries())
    if problems:
        raise RuntimeError(f"the default evaluators did not build: {problems}")
    store = ResultStore(":memory:")
    try:
        run = BatchRun(TraceEvaluator(built, store_results="all"), store.write)
        run(bench_traces(20))  # warm-up
        seconds = statistics.median(run(bench_traces()).seconds for _ in range(REPEATS))
    finally:
        store.close()
    return TRACES / seconds
