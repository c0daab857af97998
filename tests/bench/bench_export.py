"""What `export.evaluations` costs the per-trace evaluation: the same traces evaluated by a BatchRun with no export
(the baseline of this run), exporting to a live OTLP gRPC LogsService (in its own process, so its CPU is not
ours), and exporting to an unreachable endpoint (a closed port: every export fails, the queue fills and drops).
Wall time of the batch on the evaluating thread, the sender thread running beside it (its CPU, under the GIL, is
part of the cost); median of REPEATS batches of the evaluation baseline's traces, a share of them failing (one
tool span each). Printed as ratios to the baseline, with the records' fate.

    python -m tests.bench.bench_export [results: failing | all, default both]
"""

from __future__ import annotations

import multiprocessing
import random
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # `python tests/bench/bench_export.py`

from monitor.config import MonitorConfig
from monitor.engine.batch_run import BatchRun
from monitor.engine.evaluator_setup import build_evaluators
from monitor.engine.trace_evaluation import TraceEvaluator
from monitor.export.counts import EXPORTS
from monitor.export.from_config import exporter_of
from monitor.metrics.tally import MetricsTally
from tests.bench.bench_signatures import failing_traces
from tests.support.logs_sink import grpc_logs_sink
from tests.support.ports import closed_port

REPEATS = 11
FAILING_SHARE = 0.2
CONTROL = "no export, again"


def _serve(ports: multiprocessing.Queue, stop: multiprocessing.Event) -> None:  # type: ignore[type-arg]
    with grpc_logs_sink() as (endpoint, collected):
        ports.put(endpoint)
        stop.wait(600)
        ports.put(len(collected.records()))


def _interleaved(runs: dict[str, BatchRun]) -> tuple[dict[str, float], dict[str, Counter[str]]]:
    """Each run's median batch time, the runs taking turns batch by batch in a shuffled order (so the host's speed,
    which moves, moves them alike), and the records' outcomes each run's tallies carried."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    counts: dict[str, Counter[str]] = {name: Counter() for name in runs}
    for run in runs.values():
        run(failing_traces(FAILING_SHARE)[:20])  # warm-up
    order = list(runs.items())
    for _ in range(REPEATS):
        random.shuffle(order)  # no run always first after the others' senders settled
        for name, run in order:
            traces = failing_traces(FAILING_SHARE)
            started = time.perf_counter()
            result = run(traces)
            times[name].append(time.perf_counter() - started)
            counts[name].update(MetricsTally.from_wire(result.tally).exports)
            # the records this batch queued settle before the next run's batch: each run pays for its own
            for exporter in [run.exporter] if run.exporter is not None else []:
                exporter.flush(10.0)
                counts[name].update(MetricsTally.from_wire(run(()).tally).exports)
    return {name: statistics.median(values) for name, values in times.items()}, counts


def measure(results: str, live: str) -> str:
    built, problems = build_evaluators(MonitorConfig().evaluator_entries())
    assert not problems, problems
    traces = len(failing_traces(FAILING_SHARE))
    exporters = {}
    for name, endpoint in (("live sink", live), ("unreachable", f"http://127.0.0.1:{closed_port()}")):
        section = {"enabled": True, "endpoint": endpoint, "results": results, "timeout": "1s"}
        exporters[name] = exporter_of(MonitorConfig.model_validate({"export": {"evaluations": section}}))
    runs = {"no export": BatchRun(TraceEvaluator(built))}
    runs.update({name: BatchRun(TraceEvaluator(built), exporter=exporter) for name, exporter in exporters.items()})
    runs[CONTROL] = BatchRun(TraceEvaluator(built))  # no export again, last in each round: the noise floor
    EXPORTS.take()
    try:
        seconds, counts = _interleaved(runs)
    finally:
        for exporter in exporters.values():
            if exporter is not None:
                exporter.close(1.0)
    baseline = seconds["no export"]
    lines = [f"results={results}: no export {baseline / traces * 1e6:.0f} us/trace (1.00)"]
    for name in [*exporters, CONTROL]:
        fate = ", ".join(f"{k} {v}" for k, v in sorted(counts[name].items())) or "none"
        ratio = seconds[name] / baseline
        records = f"; records: {fate}" if name != CONTROL else ""
        lines.append(f"  {name}: {seconds[name] / traces * 1e6:.0f} us/trace ({ratio:.2f}){records}")
    return "\n".join(lines)


def main() -> None:
    context = multiprocessing.get_context("spawn")
    ports: multiprocessing.Queue = context.Queue()  # type: ignore[type-arg]
    stop = context.Event()
    sink = context.Process(target=_serve, args=(ports, stop), daemon=True)
    sink.start()
    live = ports.get(timeout=30)
    try:
        for results in sys.argv[1:] or ["failing", "all"]:
            print(measure(results, live), flush=True)
    finally:
        stop.set()
        print(f"the live sink received {ports.get(timeout=30)} records", flush=True)
        sink.join(10)


if __name__ == "__main__":
    main()
