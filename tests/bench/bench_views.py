"""Benchmark: decode and build the views of one 10,000-span trace; prints the figures."""

from __future__ import annotations

import os
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from evaluators.traces import build_trace, decode_bytes
from tests.bench.synthetic import agent_trace_spans, export_request

SPANS = 10_000


def main() -> None:
    steps = (SPANS - 2) // 2
    payload = export_request(agent_trace_spans(os.urandom(16), steps, time.time_ns())).SerializeToString()
    t0 = time.perf_counter()
    batch = decode_bytes(payload)
    t1 = time.perf_counter()
    trace = build_trace(batch.spans)
    t2 = time.perf_counter()
    calls = trace.get_llm_calls()
    tools = trace.get_tool_calls()
    _ = trace.metrics, trace.agent_traces(), trace.input, trace.output
    t3 = time.perf_counter()
    tool_calls_requested = sum(len(c.tool_calls) for c in calls) + sum(len(c.messages) for c in calls)
    t4 = time.perf_counter()
    tracemalloc.start()
    build_trace(batch.spans).metrics  # noqa: B018
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"views: {len(batch.spans)} spans, {len(payload) / 1e6:.1f} MB protobuf")
    print(f"  decode protobuf           {1000 * (t1 - t0):8.1f} ms")
    print(f"  build Trace (lazy)        {1000 * (t2 - t1):8.1f} ms")
    print(f"  calls, tools, metrics,    {1000 * (t3 - t2):8.1f} ms  ({len(calls)} LLM calls, {len(tools)} tools)")
    print("  agent traces, input/output")
    print(f"  parse every message       {1000 * (t4 - t3):8.1f} ms  ({tool_calls_requested} messages + tool calls)")
    print(f"  build + metrics total     {1000 * (t3 - t1):8.1f} ms  (target: well under 1000 ms)")
    print(f"  peak memory of a build    {peak / 1e6:8.1f} MB")


if __name__ == "__main__":
    main()
