"""Benchmark: the CPU each stage of the data flow and each default evaluator costs per trace, so that what the next
feature adds is visible (issue 44).

One process plays the daemon's main process and an evaluation worker, on the load generator's 7-span traces
(requests of 50: synthetic.bench_trace_spans), with the embedded default config (`MonitorConfig()`: the intake log,
the SQLite store, sessions and explanations on), through the daemon's own parts (stage_timing.Parts) and the functions
its code paths call, in the same order (stage_main.py: per request, per batch; stage_worker.py: trace by trace, as
the worker goes). Each repeat takes fresh traces through every stage; a figure is the median over the repeats of
`time.process_time` (every thread: the store's writer thread's work for a write is counted with it), each timed
piece less what an empty one costs (its clock read), per trace. The collector is set as in the daemon: start-up
objects frozen (tune_gc), the main process's thresholds for its stages, a worker's for the worker's; its pauses are
a stage of their own (in a lap they would fall on whichever evaluator's allocation happens to trigger one). The intake
log's fsyncs, on its sync thread, land in whichever stage runs then. The conversations (one turn each: a bench
trace's conversation id is its own) are completed at the end of each repeat, as if their idle time were over.

Then each evaluator: its first run on a trace (the views it is the first to ask for included), its run on the same
trace again once every view is built, and the difference, what its views cost. Last, the worker stages' sum against
one `BatchRun` call per batch on as many other traces, run beside them: the two should be close. The bench's
traces repeat eight texts, so the caches keyed by text (languages, packing's clean texts) hit as often as under the
load generator. Figures, not targets: it fails only when it breaks.

    python -m tests.bench.bench_stages [--traces 1000] [--repeats 7]
"""

from __future__ import annotations

import argparse
import gc
import pickle
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from monitor.engine.gc_tuning import collect_young
from monitor.engine.trace_wire import traces_from_wire
from tests.bench import stage_main, stage_worker
from tests.bench.stage_timing import REQUEST_TRACES, Cpu, Parts, lap_overhead, requests_of

ROOT = Path(__file__).resolve().parents[2]
TRACES = 1_000
REPEATS = 7
WARM_UP_TRACES = 200
MAIN_GC = "main: the collector's pauses (gc, in whichever stage they fall)"
WORKER_GC = "worker: the collector's pauses (gc, in whichever stage they fall)"
# The evaluator loops' rows: the evaluators of their level summed (True: the session-level ones).
SUMMED = {stage_worker.EVALUATORS: False, stage_main.SESSION_EVALUATORS: True}


@dataclass
class Figures:
    """Each repeat's CPU seconds per stage (flat: the evaluator loops summed), per evaluator, and BatchRun's."""

    traces: int
    levels: dict[str, str]  # evaluator label → level
    overhead: float  # the CPU seconds of an empty lap, taken off each timed piece
    stages: list[dict[str, float]] = field(default_factory=list)
    first: list[dict[str, float]] = field(default_factory=list)
    again: list[dict[str, float]] = field(default_factory=list)
    batch_run: list[float] = field(default_factory=list)

    def add(self, cpu: Cpu, batch_run: float) -> None:
        """A repeat's figures; the store write's row becomes the SQLite write's: the write less its packing."""
        flat = {}
        for stage, seconds in cpu.stages.items():
            if stage in SUMMED:
                session = SUMMED[stage]
                seconds += sum(s for label, s in cpu.evaluators.items() if (self.levels[label] == "session") == session)
            elif stage == stage_worker.WRITE:
                stage, seconds = stage_worker.SQLITE, seconds - cpu.stages[stage_worker.PACKING]
            flat[stage] = seconds
        for stage in (MAIN_GC, WORKER_GC):  # last in the table
            flat[stage] = flat.pop(stage, 0.0)
        self.stages.append(flat)
        self.first.append(dict(cpu.evaluators))
        self.again.append(dict(cpu.views_built))
        self.batch_run.append(batch_run)

    def per_trace(self, repeats: list[dict[str, float]]) -> dict[str, float]:
        """µs per trace: each key's median over the repeats."""
        return {k: statistics.median(r[k] for r in repeats) / self.traces * 1e6 for k in repeats[0]}


def measure(
    parts: Parts, traces: int = TRACES, repeats: int = REPEATS, *, warm_up: int = WARM_UP_TRACES, calibrate: bool = True
) -> Figures:
    """Every stage's and evaluator's CPU over `repeats` rounds of `traces` fresh traces, after a warm-up round;
    `calibrate`: each lap less what an empty one costs (else a lap's clock read is in each figure)."""
    levels = {c.label: str(getattr(c.evaluator, "level", "trace")) for c in parts.evaluator.evaluators}
    assert parts.daemon.sessions is not None
    levels |= {c.label: "session" for c in parts.daemon.sessions.evaluation.rules}
    figures = Figures(traces, levels, lap_overhead() if calibrate else 0.0)
    if warm_up:
        one_repeat(parts, warm_up, figures.overhead)
    for _ in range(repeats):
        figures.add(*one_repeat(parts, traces, figures.overhead))
    return figures


def one_repeat(parts: Parts, traces: int, overhead: float = 0.0) -> tuple[Cpu, float]:
    """Fresh traces through every stage and, batch by batch beside them (so that the host's speed moves both
    alike), as many others through one BatchRun call each: the stages' CPU, and BatchRun's seconds."""
    gc.collect()
    cpu = Cpu(overhead)
    parts.as_main()
    with cpu.collecting(MAIN_GC):
        calls = handed_off(parts, traces, cpu)
    others = handed_off(parts, traces, Cpu(overhead), logged=False)
    parts.as_worker()
    results, batch_run = [], 0.0
    for call, other in zip(calls, others, strict=True):
        with cpu.collecting(WORKER_GC):
            staged = stage_worker.evaluate_staged(parts, call, cpu)
            results.append((staged.result, [o.trace_id for o in staged.outcomes]))
            del staged  # as the worker drops a batch's outcomes once its result is sent
            collect_young()  # as worker_process.evaluate_batch does after each batch
        batch_run += batch_run_seconds(parts, other)
    parts.as_main()
    with cpu.collecting(MAIN_GC):
        for result, trace_ids in results:
            stage_main.record(parts, result, trace_ids, cpu)
        sessions = stage_main.complete_sessions(parts, cpu)
        stage_main.sessions_again(parts, sessions, cpu)
    if len(sessions) != traces:
        raise RuntimeError(f"{len(sessions)} conversations completed of {traces} traces")
    return cpu, batch_run


def handed_off(parts: Parts, traces: int, cpu: Cpu, *, logged: bool = True) -> list[bytes]:
    """Fresh traces received, assembled and completed: the pickled calls of their batches."""
    payloads = requests_of(traces)
    stage_main.ingest(parts, payloads, cpu, logged=logged)
    return stage_main.hand_off(parts, stage_main.complete(parts, cpu), cpu)


def batch_run_seconds(parts: Parts, call: bytes) -> float:
    """The CPU seconds of the worker's BatchRun call on a batch, decoded from the wire as the worker does first."""
    batch = traces_from_wire(pickle.loads(call)[1][0])
    began = time.process_time()
    parts.run(batch)
    if parts.worker_store is not None:  # its rows, written one batch behind, within its time (not the next stage's)
        parts.worker_store.flush()
    del batch
    collect_young()  # as worker_process.evaluate_batch does after each batch
    return time.process_time() - began


def report(figures: Figures) -> list[str]:
    stages = figures.per_trace(figures.stages)
    total = sum(stages.values())
    lines = [f"  {'stage':<78}{'µs/trace':>10}{'share':>8}"]
    lines += [f"  {stage:<78}{us:>10.1f}{100 * us / total:>7.1f}%" for stage, us in stages.items()]
    lines.append(f"  {'total (the sum of the stages)':<78}{total:>10.1f}{100.0:>7.1f}%")
    first, again = figures.per_trace(figures.first), figures.per_trace(figures.again)
    lines += [
        "",
        "  each evaluator, µs/trace: its first run on a trace (the views it is the first to ask for included), its run",
        "  once every view is built (its own cost), and the difference (its views)",
        f"  {'evaluator':<24}{'level':<9}{'first run':>10}{'views built':>13}{'its views':>11}",
    ]
    for label in sorted(first, key=first.__getitem__, reverse=True):
        lines.append(
            f"  {label:<24}{figures.levels[label]:<9}{first[label]:>10.1f}{again[label]:>13.1f}"
            f"{first[label] - again[label]:>11.1f}"
        )
    inside = [
        sum(s for k, s in r.items() if k.startswith("worker:") and k not in stage_worker.OUTSIDE_BATCH_RUN)
        for r in figures.stages
    ]
    staged = statistics.median(inside) / figures.traces * 1e6
    whole = statistics.median(figures.batch_run) / figures.traces * 1e6
    ratio = statistics.median(i / b for i, b in zip(inside, figures.batch_run, strict=True))
    lines += [
        "",
        f"  {'the worker stages BatchRun runs, summed (records_of … batch result)':<78}{staged:>10.1f}",
        f"  {'one BatchRun call per batch, on as many other traces beside them':<78}{whole:>10.1f}",
        f"  {'stages / BatchRun (the median of the ratios of the repeats)':<78}{ratio:>10.2f}",
    ]
    return lines


def commit() -> str:
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True)
    return f"{head.stdout.strip() or '?'}{' + uncommitted changes' if dirty.stdout.strip() else ''}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=TRACES, help="traces per repeat")
    parser.add_argument("--repeats", type=int, default=REPEATS, help="repeats (the figures are their medians)")
    args = parser.parse_args()
    print(f"stages: commit {commit()}", flush=True)
    began = time.monotonic()
    parts = Parts()
    try:
        parts.tune_gc()
        figures = measure(parts, args.traces, args.repeats)
        batch = parts.daemon.pool.batch_size
    finally:
        parts.close()
    print(
        f"  CPU µs per trace: the median of {args.repeats} repeats of {args.traces} traces of 7 spans (requests of "
        f"{REQUEST_TRACES}, batches of {batch}), each timed piece less an empty one's "
        f"{figures.overhead * 1e6:.2f} µs; {time.monotonic() - began:.0f} s"
    )
    print("\n".join(report(figures)))


if __name__ == "__main__":
    main()
