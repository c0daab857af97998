"""Bench: past one machine (issue 44 item 4) — the figures docs/scaling.md's capacity model is built from.

On this host, through the project's own code paths, against a real PostgreSQL server (tests/support/pgserver.py;
`fsync` on, as a production server runs, unless BENCH_SCALING_FSYNC=0; the server's defaults otherwise):

1. Evaluation per core: one thread evaluating the bench's 7-span traces (evaluation_baseline.py) with the default
   evaluators, 10 % of them with a failing tool call (bench_signatures.py's `failing_traces`), store off and
   with the PostgreSQL store written synchronously on that thread (packing and the client's side of the write
   included, the server's CPU not): CPU time of the process per trace, median of BENCH_SCALING_REPEATS (5).
2. What one evaluated trace writes to PostgreSQL: rows per table and bytes (`pg_total_relation_size` deltas, WAL
   from `pg_current_wal_lsn()`), for `results: all`, `results: failing` and `failing` on traces without skips;
   and the conversation turn the main process writes for it (`sessions.shared`).
3. The store's write ceiling: 1, 2, 4, ... writer processes (BENCH_SCALING_WRITERS, "1,2,4,8,16"), each like an
   evaluation worker's store (one connection, BENCH_SCALING_BATCH traces, 64, per transaction), writing packed
   rows for BENCH_SCALING_SECONDS (5), the best of BENCH_SCALING_ROUNDS (2) runs each, until the total stops
   growing (twice in a row less than 5 % more than the best); then `failing` at the best count. Printed with the
   server's and the writers' CPU per trace, the host's other work, and the host's cores over that CPU (the
   ceiling of a host with no other work, if the writes are CPU-bound).
4. Retention: the store's own prune by age (monitor/store/retention.py, under its advisory lock) of every trace
   the ceiling's best run wrote, then the VACUUM that makes their space reusable; per 10,000 traces.
5. The Collector's trace-ID load balancing: its ring re-implemented (collector_ring.py), the share of trace ids
   that move when N replicas become N+1 or N-1 (BENCH_SCALING_RING_REPLICAS, BENCH_SCALING_RING_TRIALS random sets
   of pod addresses each, 100), and the traces split across two replicas at a change (scaling_model.py).
6. The capacity model from those figures (scaling_model.py): replicas at the store's ceiling, what `failing`,
   retention and conversation turns do to it, bytes per million traces.

Figures, not targets: exits 0 unless something broke.

    python -m tests.bench.bench_scaling
"""

from __future__ import annotations

import functools
import os
import platform
import statistics
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import psycopg

from monitor.config import MonitorConfig
from monitor.engine.batch_run import BatchRun
from monitor.engine.evaluator_setup import build_evaluators
from monitor.engine.gc_tuning import tune_gc
from monitor.engine.trace_evaluation import TraceEvaluator
from monitor.outcomes import TraceOutcome
from tests.bench.bench_signatures import failing_traces
from tests.bench.scaling_model import Model, print_model, print_ring
from tests.bench.store_load import Added, Tables, open_store, other_load, packed_batches, run_writers, server_cpu

ROOT = Path(__file__).resolve().parents[2]
FAILING_SHARE = 0.1  # traces with a failing result (a tool call that fails: error_free and tool_success_rate)
REPEATS = int(os.environ.get("BENCH_SCALING_REPEATS", "5"))
BATCH = int(os.environ.get("BENCH_SCALING_BATCH", "64"))
WRITERS = [int(n) for n in os.environ.get("BENCH_SCALING_WRITERS", "1,2,4,8,16").split(",")]
SECONDS = float(os.environ.get("BENCH_SCALING_SECONDS", "5"))
ROUNDS = int(os.environ.get("BENCH_SCALING_ROUNDS", "2"))  # runs of each writer count: the best is kept
FSYNC = os.environ.get("BENCH_SCALING_FSYNC", "1") != "0"
TEMPLATE_TRACES = 256  # the writers' packed rows, under new trace ids batch after batch
GROWING = 1.05  # the ceiling: twice in a row, more writers added less than 5 % to the best total
SETTINGS = ("server_version", "fsync", "synchronous_commit", "shared_buffers", "max_wal_size", "wal_level")


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False).stdout.strip()


def header() -> None:
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor() or "unknown")  # fmt: skip
    dirty = " (with uncommitted changes)" if git("status", "--porcelain", "--untracked-files=no") else ""
    print(f"commit {git('rev-parse', '--short', 'HEAD')}{dirty}, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")
    print(f"host: {os.cpu_count()} cores ({len(os.sched_getaffinity(0))} usable), {model}, "
          f"Python {platform.python_version()}, {platform.system()} {platform.release()}")  # fmt: skip
    print(f"host load before the run: {other_load():.2f} cores busy with other work")
    print(f"traces: the bench's 7-span agent traces, {FAILING_SHARE:.0%} with a failing tool call; default evaluators")


def settings(server: Any) -> None:
    with psycopg.connect(server.url("postgres"), autocommit=True) as db:
        shown = {name: db.execute(f"SHOW {name}").fetchone()[0] for name in SETTINGS}  # type: ignore[index]
    print("PostgreSQL: " + ", ".join(f"{name} {value}" for name, value in shown.items()) + "; defaults otherwise. "
          "Writers, server and this process share the host's cores")  # fmt: skip


# --- 1. evaluation per core ---------------------------------------------------------------------
def evaluation(url: str) -> tuple[dict[str, float], list[TraceOutcome]]:
    """CPU ms per trace, store off and store on (PostgreSQL, written on the evaluating thread); the outcomes the
    store-off runs produced (every repeat's: fresh trace ids)."""
    config = MonitorConfig()
    built, problems = build_evaluators(config.evaluator_entries())
    if problems:
        raise RuntimeError(f"the default evaluators did not build: {problems}")
    evaluator = TraceEvaluator.from_config(built, config)
    tune_gc()  # as an evaluation worker does once it is initialized
    outcomes: list[TraceOutcome] = []
    store = open_store(url, "all")
    runs = {"store off": BatchRun(evaluator, outcomes.extend), "PostgreSQL store on": BatchRun(evaluator, store.write)}
    cpu: dict[str, list[float]] = {name: [] for name in runs}
    wall: dict[str, list[float]] = {name: [] for name in runs}
    for run in runs.values():
        run(failing_traces(FAILING_SHARE)[:20])  # warm-up
    outcomes.clear()
    for _ in range(REPEATS):
        for name, run in runs.items():  # alternating: a drift of the host's speed hits both
            traces = failing_traces(FAILING_SHARE)
            started, used = time.perf_counter(), time.process_time()
            run(traces)
            cpu[name].append(1000 * (time.process_time() - used) / len(traces))
            wall[name].append(1000 * (time.perf_counter() - started) / len(traces))
    if store.write_errors:
        raise RuntimeError(f"the evaluation's store writes failed ({store.write_errors})")
    store.close()
    figures = {name: statistics.median(values) for name, values in cpu.items()}
    print(f"\n1. evaluation, one thread ({REPEATS} x {len(failing_traces(FAILING_SHARE))} traces, medians)")
    for name in runs:
        ms, ms_wall = figures[name], statistics.median(wall[name])
        print(f"   {name:<22}{ms:7.3f} CPU ms/trace = {1000 / ms:6.0f} traces/s per core   "
              f"(wall {ms_wall:.3f} ms/trace = {1000 / ms_wall:.0f} traces/s)")  # fmt: skip
    return figures, outcomes


# --- 2. rows and bytes per trace ----------------------------------------------------------------
def without_skips(outcomes: list[TraceOutcome]) -> list[TraceOutcome]:
    """The outcomes with their skips left out: traces in which every evaluator found something to judge."""
    return [o._replace(results=tuple(r for r in o.results if r.skip_reason is None)) for o in outcomes]


@dataclass(frozen=True)
class Write:
    added: Added  # rows and bytes per table, WAL bytes
    traces: int
    writer_cpu_ms: float  # this process's CPU per trace: packing and the client's side
    server_cpu_ms: float  # the server's CPU per trace


def measured_write(url: str, postmaster: int, work: Callable[[], int]) -> Write:
    """What `work` added to the tables and the CPU it took; `work` returns the traces it wrote."""
    before, used, server = Tables.read(url), time.process_time(), server_cpu(postmaster)
    traces = work()
    cpu, server = time.process_time() - used, server_cpu(postmaster) - server
    return Write(Added.between(url, before, Tables.read(url)), traces, 1000 * cpu / traces, 1000 * server / traces)


def per_trace(server: Any, outcomes: list[TraceOutcome]) -> dict[str, Write]:
    """Each mode's additions, written through the store's own `write` (packing included), BATCH per write."""
    found: dict[str, Write] = {}
    cases = (("all", outcomes, "all"), ("failing", outcomes, "failing"),
             ("failing, no skips", without_skips(outcomes), "failing"))  # fmt: skip
    for label, written, results in cases:
        url = server.new_database()
        store = open_store(url, results)
        store.write(written[:BATCH])  # the first statements prepared, the schema's first pages: before

        def work(store: Any = store, written: list = written) -> int:
            for start in range(BATCH, len(written), BATCH):
                store.write(written[start : start + BATCH])
            return len(written) - BATCH

        found[label] = measured_write(url, server.process.pid, work)
        if label == "all":
            turns_of = functools.partial(turns, store, written)
            found["conversation turns"] = measured_write(url, server.process.pid, turns_of)
        if store.write_errors:
            raise RuntimeError(f"{label}: {store.write_errors} writes failed")
        store.close()
    print_per_trace(found)
    return found


def turns(store: Any, outcomes: list[TraceOutcome]) -> int:
    """Each trace's conversation turn written as the main process's shared session tracker writes them."""
    tables, wires = store.open_session_tables, [o.turn for o in outcomes if o.turn is not None]
    for start in range(0, len(wires), BATCH):
        part = wires[start : start + BATCH]
        store.transaction(lambda db, part=part: tables.arrive(db, part, "bench", 200))
    return len(wires)


def print_per_trace(found: dict[str, Write]) -> None:
    print(f"\n2. written to PostgreSQL per evaluated trace ({found['all'].traces} traces, {BATCH} per transaction, "
          "one writer; bytes: table + TOAST + indexes)")  # fmt: skip
    for label, w in found.items():
        tables = ", ".join(f"{t} {rows / w.traces:.2f}" for t, rows in sorted(w.added.rows.items()))
        print(f"   {label:<19} rows/trace {sum(w.added.rows.values()) / w.traces:5.2f} ({tables})")
        print(f"   {'':<19} bytes/trace {sum(w.added.size.values()) / w.traces:7,.0f} in tables, WAL "
              f"{w.added.wal / w.traces:7,.0f}; CPU ms/trace: writer {w.writer_cpu_ms:.3f} (packing + client), "
              f"server {w.server_cpu_ms:.3f}")  # fmt: skip


# --- 3. the write ceiling -----------------------------------------------------------------------
def ceiling(server: Any, outcomes: list[TraceOutcome]) -> tuple[dict[str, Any], str]:
    """The writer sweep (`results: all`) and `failing` at its best count; the best run's database."""
    template = outcomes[:TEMPLATE_TRACES]
    batches = {"all": packed_batches(template, BATCH, False), "failing": packed_batches(template, BATCH, True),
               "failing, no skips": packed_batches(without_skips(template), BATCH, True)}  # fmt: skip
    print(f"\n3. write ceiling: writer processes, {BATCH} traces per transaction, {SECONDS:g} s each run, best of "
          f"{ROUNDS}")  # fmt: skip
    sweep, best, best_url, flat = [], None, "", 0
    for writers in WRITERS:  # until two counts in a row did not add 5 % to the best total
        point, url = _ceiling_run(server, "all", batches["all"], writers)
        sweep.append(point)
        flat = 0 if best is None or point.traces_per_second >= GROWING * best.traces_per_second else flat + 1
        if best is None or point.traces_per_second > best.traces_per_second:
            best, best_url = point, url
        if flat == 2:
            break
    assert best is not None
    found: dict[str, Any] = {"all": best, "sweep": sweep}
    for label in ("failing", "failing, no skips"):
        found[label] = _ceiling_run(server, "failing", batches[label], best.writers, label)[0]
    print(f"   ceiling: {best.traces_per_second:,.0f} traces/s (results: all) at {best.writers} writers; "
          f"failing {found['failing'].traces_per_second:,.0f}, failing without skips "
          f"{found['failing, no skips'].traces_per_second:,.0f} traces/s")  # fmt: skip
    return found, best_url


def _ceiling_run(server: Any, results: str, batches: list, writers: int, label: str = "all") -> tuple[Any, str]:
    """The best of ROUNDS runs (the host's other work only ever slows one) and its database."""
    runs = []
    for _ in range(ROUNDS):
        url = server.new_database()
        open_store(url, results).close()  # the schema, before the writers
        runs.append((run_writers(url, server.process.pid, results, batches, writers, SECONDS), url))
    point, url = max(runs, key=lambda run: run[0].traces_per_second)
    print(f"   {label:<18}writers {writers:>2} {point.traces_per_second:8,.0f} traces/s (runs "
          f"{', '.join(f'{r[0].traces_per_second:,.0f}' for r in runs)})   CPU ms/trace: server "
          f"{point.server_cpu_ms:.3f}, writers {point.writer_cpu_ms:.3f}; other work {point.other_cores:.2f} cores; "
          f"the host's cores / that CPU: {point.cpu_bound:,.0f} traces/s")  # fmt: skip
    return point, url


# --- 4. retention -------------------------------------------------------------------------------
def retention(url: str, postmaster: int) -> dict[str, float]:
    """The prune by age of every trace in `url` (all expired), then the VACUUM of the tables it touched."""
    store = open_store(url, "all")
    before, cpu, started = Tables.read(url), server_cpu(postmaster), time.perf_counter()
    store.prune(time.time() + store.retention_seconds + 3600)  # every trace written is past the retention
    pruned, pruned_cpu = time.perf_counter() - started, server_cpu(postmaster) - cpu
    store.close()
    after = Tables.read(url)
    deleted = Added.between(url, before, after)
    traces = -deleted.rows.get("traces", 0)
    cpu, started = server_cpu(postmaster), time.perf_counter()
    with psycopg.connect(url, autocommit=True) as db:
        for table in sorted(deleted.rows):
            db.execute(f'VACUUM "{table}"')
    vacuumed, vacuum_cpu = time.perf_counter() - started, server_cpu(postmaster) - cpu
    per = 10_000 / traces
    print(f"\n4. retention by age: {traces:,} expired traces ({-sum(deleted.rows.values()):,} rows in "
          f"{', '.join(sorted(deleted.rows))})")  # fmt: skip
    print(f"   prune   {pruned * per:6.2f} s wall, {pruned_cpu * per:6.2f} s server CPU per 10,000 traces "
          f"(WAL {deleted.wal / traces:,.0f} bytes/trace)")  # fmt: skip
    print(f"   VACUUM  {vacuumed * per:6.2f} s wall, {vacuum_cpu * per:6.2f} s server CPU per 10,000 traces")
    return {"prune_cpu_ms": 1000 * pruned_cpu / traces, "vacuum_cpu_ms": 1000 * vacuum_cpu / traces,
            "prune_wall_ms": 1000 * pruned / traces}  # fmt: skip


def main() -> int:
    from tests.support.pgserver import PostgresServer

    header()
    started = time.perf_counter()
    server = PostgresServer({"fsync": "on" if FSYNC else "off"})  # on: as a production server runs
    try:
        server.start()
        settings(server)
        eval_cpu, outcomes = evaluation(server.new_database())
        writes = per_trace(server, outcomes)
        found, best_url = ceiling(server, outcomes)
        kept = retention(best_url, server.process.pid)  # type: ignore[union-attr]
        print_ring()
        print_model(Model(eval_cpu, writes, found, kept))
    except Exception as exc:  # a figure is missing: say what broke
        traceback.print_exc()
        print(f"bench_scaling: BROKEN: {type(exc).__name__}: {exc}", flush=True)
        return 1
    finally:
        server.stop()
    print(f"\n(bench run took {time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
