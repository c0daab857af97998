"""Benchmark: the evaluation pool alone, 1 worker vs N (= usable cores); prints traces/s and the ratio.

Builds BENCH_POOL_TRACES (6000) completed 7-span agent traces in memory (decoded and assembled as the
daemon does), then pushes them all at once through `monitor.engine.pool.EvaluationPool` with the default
evaluators: one in-process thread (what `evaluation.workers: 1` runs), one worker process, and N worker
processes. No receivers, no metrics, no store: `record` only counts, so this is the evaluation path the
daemon's workers scale by, without the main process competing for the cores. Each pool is warmed up
first. CPU is this process and its workers (proctree.py). A missed target still exits 0.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from evaluators.traces.otlp_proto import decode_traces_protobuf
from monitor.config import MonitorConfig, load_config
from monitor.engine.assembler import CompletedTrace, TraceAssembler
from monitor.engine.pool import EvaluationPool, WorkerSlot, process_slots, thread_slot
from monitor.engine.trace_evaluation import TraceEvaluator
from monitor.metrics.tally import MetricsTally
from monitor.preflight import preflight
from tests.bench.proctree import TreeSampler
from tests.bench.synthetic import bench_trace_spans, export_request

TRACES = int(os.environ.get("BENCH_POOL_TRACES", "6000"))
WARM_UP = 256
CORES = len(os.sched_getaffinity(0))
TARGET_SCALING = 0.8  # N workers >= 0.8 x N x 1 worker
DRAIN_SECONDS = 600.0
PER_REQUEST = 50  # traces decoded together, as in one export request


class Broken(Exception):
    """Something failed that makes the figures meaningless."""


@dataclass
class Measure:
    name: str
    traces: int
    seconds: float
    main_cpu: float  # CPU seconds of this process
    workers_cpu: float  # CPU seconds of its children (worker processes, resource tracker)

    @property
    def per_second(self) -> float:
        return self.traces / self.seconds

    def describe(self) -> str:
        share = (self.main_cpu + self.workers_cpu) / (self.seconds * CORES)
        return (
            f"  {self.name:<22}{self.per_second:>8,.0f} traces/s  ({self.traces:,} in {self.seconds:.2f} s; "
            f"CPU main {100 * self.main_cpu / self.seconds:.0f}% of a core, workers "
            f"{100 * self.workers_cpu / self.seconds:.0f}%, all {100 * share:.0f}% of {CORES} cores)"
        )


def completed_traces(count: int, first_id: int) -> list[CompletedTrace]:
    """`count` bench traces through the decoder and the assembler, all complete."""
    assembler = TraceAssembler(quiet_period=0.001, max_pending_spans=10 * count * 7 + 1000)
    for start in range(0, count, PER_REQUEST):
        ids = range(first_id + start, first_id + min(start + PER_REQUEST, count))
        spans = [span for n in ids for span in bench_trace_spans(n.to_bytes(16, "big"), 10**18, n % 8)]
        assembler.add(decode_traces_protobuf(export_request(spans).SerializeToString(), "bench").spans)
    assembler.collect_due(now=time.monotonic() + 10)
    done = assembler.take_due()
    if len(done) != count:
        raise Broken(f"assembled {len(done)} traces, expected {count}")
    return done


def make_slots(config: MonitorConfig, kind: str, workers: int) -> list[WorkerSlot]:
    if kind == "thread":
        evaluators = preflight(config).evaluators
        evaluation = config.evaluation
        return thread_slot(TraceEvaluator(evaluators, timeout_seconds=evaluation.timeout, mode=evaluation.mode))
    return process_slots(config, workers)


async def run_pool(pool: EvaluationPool, traces: list[CompletedTrace]) -> None:
    for trace in traces:
        if not pool.submit(trace):
            raise Broken("the pool refused a trace (queue_size too small)")
    left = await pool.drain(DRAIN_SECONDS)
    if left:
        raise Broken(f"{left} traces not evaluated within {DRAIN_SECONDS:g} s")


async def measure(config: MonitorConfig, name: str, kind: str, workers: int) -> Measure:
    """Warm the pool up, then time `TRACES` traces through it."""
    warm, traces = completed_traces(WARM_UP, 1), completed_traces(TRACES, WARM_UP + 1)
    outcomes: list[int] = [0]
    dropped: list[str] = []

    def record(tally: MetricsTally) -> None:
        outcomes[0] += tally.evaluated

    def count_dropped(reason: str, count: int) -> None:
        dropped.append(f"{count} {reason}")

    pool = EvaluationPool(make_slots(config, kind, workers), record, count_dropped, queue_size=TRACES + WARM_UP)
    await pool.start()
    try:
        await run_pool(pool, warm)
        sampler = TreeSampler(os.getpid())
        before = sampler.mark()
        await run_pool(pool, traces)
        after = sampler.mark()
    finally:
        await pool.shutdown(5.0)
    if dropped or outcomes[0] != WARM_UP + TRACES:
        raise Broken(f"{name}: {outcomes[0]} outcomes of {WARM_UP + TRACES}; dropped {', '.join(dropped) or 0}")
    main = sum(s - before.cpu.get(k, 0.0) for k, s in after.cpu.items() if k[0] == os.getpid())
    return Measure(name, TRACES, after.at - before.at, main, after.cpu_since(before) - main)


async def bench() -> list[Measure]:
    config = load_config(None)  # the embedded default, without the store (the workers would write it)
    config = config.model_copy(update={"store": config.store.model_copy(update={"enabled": False})})
    plan = [("thread (workers: 1)", "thread", 1), ("1 process", "process", 1)]
    if CORES > 1:
        plan.append((f"{CORES} processes", "process", CORES))
    return [await measure(config, name, kind, workers) for name, kind, workers in plan]


def report(measures: list[Measure]) -> None:
    print(
        f"evaluation pool alone: {TRACES:,} completed 7-span traces (BENCH_POOL_TRACES) submitted at once, "
        f"default evaluators, record() only counts; {CORES} usable cores (sched_getaffinity), "
        f"load average {os.getloadavg()[0]:.2f} at the end"
    )
    for m in measures:
        print(m.describe())
    thread, one = measures[0], measures[1]
    if len(measures) < 3:
        print(f"  workers N / 1: n/a on {CORES} core")
        return
    many = measures[2]
    ratio, target = many.per_second / one.per_second, TARGET_SCALING * CORES
    verdict = "OK" if ratio >= target else "MISSED"
    print(f"  {CORES} processes / 1 process   {ratio:.2f}x   target >= {target:.1f}x ({TARGET_SCALING} x N): {verdict}")
    versus_thread = many.per_second / thread.per_second
    print(f"  {CORES} processes / thread      {versus_thread:.2f}x   (the daemon's workers 1 vs auto)")


def main() -> int:
    try:
        measures = asyncio.run(bench())
    except Broken as exc:
        print(f"bench_workers: BROKEN: {exc}", flush=True)
        return 1
    report(measures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
