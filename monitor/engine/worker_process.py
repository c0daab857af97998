"""The code that runs inside an evaluation worker process (started with `spawn`, never `fork`).

The worker builds its own evaluators from the config (evaluator instances need not be picklable), ignores
SIGINT/SIGTERM (the main process decides when work stops and drains it), and exits on its own when the main
process is gone.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Sequence
from multiprocessing import util

from monitor.config import MonitorConfig
from monitor.engine.batch_run import BatchResult, BatchRun, Settlement
from monitor.engine.capacity_probe import spans_per_second
from monitor.engine.evaluator_setup import build_evaluators
from monitor.engine.gc_tuning import collect_young, tune_gc
from monitor.engine.trace_evaluation import TraceEvaluator
from monitor.engine.trace_wire import WireTrace, traces_from_wire
from monitor.export.exporter import EvaluationExporter
from monitor.export.from_config import exporter_of
from monitor.logutil import configure_logging
from monitor.outcomes import TraceOutcome
from monitor.store.from_config import open_result_store
from monitor.store.health import StoreHealth, StoreReport
from monitor.store.schema import StoreSchemaError
from monitor.store.signatures import NewCounts
from monitor.store.writer import QueuedResultStore

PARENT_POLL_SECONDS = 1.0
# How long a batch waits for the rows of the batch before it to be written before its result goes back: the
# writer thread writes one batch while the worker evaluates the next (the database's own time, GIL released,
# overlaps evaluation: with no wait at all, one 20 s run each on a noisy host, 1,159 evaluated/s against 959-983
# waiting for the batch's own rows), and a count is never more than one batch ahead of its rows (an idle writer
# writes at once: milliseconds). Past the wait, batches stop waiting until the writer has caught up: a database
# that is slow or hangs never holds evaluation up (nor trips the worker stall limit). With the intake log on, the
# result lists the traces still waiting for their rows: the log keeps them until a later result (or an idle
# worker's report) says they are written.
WRITE_WAIT_SECONDS = 2.0
EXIT_WRITE_SECONDS = 5.0  # at exit, how long the rows still queued may take to be written
EXIT_EXPORT_SECONDS = 2.0  # at exit, how long the evaluation records still queued may take to be sent

_evaluator: TraceEvaluator | None = None
_run: BatchRun | None = None


def initialize(config: MonitorConfig, parent_pid: int) -> None:
    """ProcessPoolExecutor initializer: signals, logging, evaluators, the worker's own connection to the result
    store (it writes the rows of the batches it evaluates), its evaluation exporter (`export.evaluations`), and the
    watch on the main process."""
    global _evaluator, _run
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    configure_logging(config.logging.level, config.logging.format)
    built, problems = build_evaluators(config.evaluator_entries(), config.pricing.overrides())
    if problems:  # preflight built the same set in the main process, so this means the worker's import differs
        raise RuntimeError("; ".join(message for _, message in problems))
    _evaluator = TraceEvaluator.from_config(built, config)
    _run = BatchRun(_evaluator, *_store_writer(config), exporter=_exporter(config))
    threading.Thread(target=_exit_with_parent, args=(parent_pid,), name="parent-watch", daemon=True).start()
    tune_gc()


def _store_writer(
    config: MonitorConfig,
) -> tuple[Callable | None, Callable[[], StoreReport] | None, Callable[[], NewCounts] | None, Settlement | None]:
    """This worker's connection to the result store: its `write` (through the store's bounded queue and writer
    thread, waiting WRITE_WAIT_SECONDS at most for the previous batch's rows; the main process keeps the
    retention), its health report and the failure signatures it counted new, for the tallies (the rows written
    after their batch went back are reported with the next batch or `report`), and with the intake log on its
    `settlement` (which evaluated traces still wait for their rows: the log keeps them until they do not). A store
    that cannot be opened here is reported through them, and retried, like any store failure: the worker
    evaluates all the same."""
    store = config.store
    if not store.enabled:
        return None, None, None, None
    health = StoreHealth(quiet=True)  # the daemon logs what the reports say
    try:
        writer = open_result_store(store, health=health, prune=False, pool_size=1, signatures=config.signatures)
    except StoreSchemaError as exc:  # preflight refuses such a database: it changed since
        health.failed("open", exc)
        return None, health.take_report, None, None
    settlement = None
    if config.intake.wal.enabled:
        writer.hold_unwritten()
        settlement = writer.settlement
    writer.start_writer()
    util.Finalize(None, writer.close, kwargs={"timeout": EXIT_WRITE_SECONDS}, exitpriority=10)  # at worker exit
    return BatchWriter(writer), health.take_report, writer.news.take, settlement


class BatchWriter:
    """A worker's write of a batch's rows into its `store`: waiting (WRITE_WAIT_SECONDS at most) for the previous
    batch's rows, so that the writer thread writes one batch while the worker evaluates the next; or for this
    batch's own when one of its traces will have results added to its stored row later (an LLM judge's, a
    pairwise judge's): the main process sends those requests once the batch is reported, and a verdict back before
    the trace's row was written would have no row to join (a passing result is appended to it)."""

    def __init__(self, store: QueuedResultStore) -> None:
        self.store = store

    def __call__(self, outcomes: Sequence[TraceOutcome]) -> None:
        later = any(o.judge_jobs or o.pair_keys for o in outcomes)
        self.store.write(outcomes, wait=WRITE_WAIT_SECONDS, one_behind=not later)


def _exporter(config: MonitorConfig) -> EvaluationExporter | None:
    """This worker's evaluation exporter (None when off), closed at worker exit (before the store: it waits less).
    Its counts go back with the next batch's tally: those of the last records sent before exit are not counted."""
    exporter = exporter_of(config)
    if exporter is not None:
        util.Finalize(None, exporter.close, kwargs={"timeout": EXIT_EXPORT_SECONDS}, exitpriority=20)
    return exporter


def evaluate_batch(wire: list[WireTrace]) -> BatchResult:
    """Evaluate and store a batch in this worker, sent in its wire form (`trace_wire.traces_to_wire`): its metrics
    tally in wire form, this worker store's health report, and the seconds it took (decoding and the young
    generation's collection included)."""
    if _run is None:
        raise RuntimeError("evaluation worker not initialized")
    started = time.perf_counter()
    result = _run(traces_from_wire(wire))
    collect_young()  # the batch is gone: what the collector walks now is least (gc_tuning.py)
    return result._replace(seconds=time.perf_counter() - started)


def report() -> BatchResult:
    """This worker store's side alone, between batches (`BatchRun.report`)."""
    if _run is None:
        raise RuntimeError("evaluation worker not initialized")
    return _run.report()


def ping() -> int:
    """Answered once the worker is initialized (the main process waits for it at start): its pid."""
    return os.getpid()


def measure_capacity() -> float:
    """Spans per second this worker evaluates on typical traces (see capacity_probe.py)."""
    if _evaluator is None:
        raise RuntimeError("evaluation worker not initialized")
    return spans_per_second(_evaluator)


def _exit_with_parent(parent_pid: int) -> None:
    while True:
        time.sleep(PARENT_POLL_SECONDS)
        if os.getppid() != parent_pid:
            os._exit(0)
