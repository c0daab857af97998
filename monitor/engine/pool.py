"""EvaluationPool: completed traces → evaluation workers (routed by trace id) → outcomes back on the loop.

Each worker slot is a single-worker executor: a process (`evaluation.workers` ≥ 2) or one thread of this
process (0 or 1); worker_slots.py starts, measures, stops and kills them. A trace always goes to the slot its
trace id hashes to, so it is evaluated once and per-trace state stays in one place. Traces wait in the slot's
queue and leave in batches, at most `BATCHES_IN_FLIGHT` per slot, so a worker always has its next batch ready and
results come back in bulk.

`queue_size` bounds the traces waiting in the slots' queues (not those in flight): `free_slots` is what
admission control looks at, and `submit` takes every trace offered, so no worker starves behind a global
cap while another worker's queue is full (routing by trace id is never perfectly even). A worker that dies
has its in-flight traces counted as dropped (`worker_crash`) and is replaced (with backoff if it keeps
dying); its queued traces go to the replacement. Each batch's metrics tally is handed to `record` on the event
loop thread, and the worker store's health report that comes back beside it (batch_run.BatchResult) to
`on_store_report` (the daemon's `StoreHealth.apply_report`), the failure signatures that store counted new to
`on_new_signatures` (the signature metrics).

With the intake log on, the traces of a batch whose rows still wait to be written are told to `on_finished` only
once their rows are (rows_waits.py).

A worker process that returns no batch for `stall_seconds` while it has one (an evaluator that never returns:
an endless loop, a regular expression that backtracks for hours) is killed by `check_stalled`, which the
dispatcher calls every tick: its in-flight traces are counted as dropped (`worker_stalled`) and it is
replaced like a crashed one. Evaluator timeouts (`evaluation.timeout`) are judged after the fact and cannot
stop a running evaluator; this bounds what a stuck one costs. A thread cannot be killed: a stuck in-process
worker is only logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import BrokenExecutor, Executor, Future

from monitor.config.models import EvaluationConfig
from monitor.engine.assembler import CompletedTrace
from monitor.engine.batch_run import BatchResult
from monitor.engine.rows_waits import OnNewSignatures, OnStoreReport, RowWaits, store_side, tell_finished
from monitor.engine.worker_slots import (
    EvaluationStartError,
    WorkerSlot,
    measure_workers,
    process_slots,
    start_workers,
    stop_workers,
    stuck_evaluation_threads,
    thread_slot,
)
from monitor.metrics.tally import MetricsTally

__all__ = [
    "EvaluationPool",
    "EvaluationStartError",
    "WorkerSlot",
    "process_slots",
    "route",
    "stall_limit",
    "stuck_evaluation_threads",
    "thread_slot",
]

log = logging.getLogger(__name__)

BATCH_SIZE = 64
MAIN_PROCESS_CORES = 0.5  # what ingest takes of the cores at full speed, for the first estimate of capacity
RATE_WEIGHT = 0.05  # weight of the latest batch in a worker's moving sums of spans and of batch seconds
BATCHES_IN_FLIGHT = 2
MIN_STALL_SECONDS = 60.0
_DEFAULTS = EvaluationConfig()


def stall_limit(evaluation_timeout: float) -> float:
    """How long a busy worker may go without returning a batch: four evaluator timeouts, at least a minute."""
    return max(MIN_STALL_SECONDS, 4.0 * evaluation_timeout)


Record = Callable[[MetricsTally], None]
CountDropped = Callable[[str, int], None]


class EvaluationPool:
    def __init__(
        self,
        slots: Sequence[WorkerSlot],
        record: Record,
        count_dropped: CountDropped,
        *,
        queue_size: int = _DEFAULTS.queue_size,
        batch_size: int = BATCH_SIZE,
        count_restart: Callable[[], None] = lambda: None,
        on_store_report: OnStoreReport | None = None,
        on_new_signatures: OnNewSignatures | None = None,
        cores: int | None = None,
        stall_seconds: float = stall_limit(_DEFAULTS.timeout),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`on_store_report`: told each worker store's health report (the daemon's `StoreHealth.apply_report`);
        `on_new_signatures`: told the failure signatures each worker store counted new (the signature metrics);
        `cores`: the usable cores (default: this process's CPU affinity), for the first capacity estimate;
        `stall_seconds`: see `check_stalled`."""
        if not slots:
            raise ValueError("an evaluation pool needs at least one worker slot")
        self.slots = list(slots)
        self.record = record
        self.count_dropped = count_dropped
        self.count_restart = count_restart
        self.on_store_report = on_store_report
        self.on_new_signatures = on_new_signatures
        self.queue_size = queue_size
        self.batch_size = batch_size
        self.stall_seconds = stall_seconds
        self.clock = clock
        self.held = 0  # traces queued or in flight
        self.spans_held = 0  # their spans
        self.capacity = 0.0  # spans/s the workers evaluate when all are busy (see _measure); 0 while unknown
        self.cores = cores if cores is not None else len(os.sched_getaffinity(0))
        self.evaluated = 0
        self.restarts = 0
        # Told the trace ids done with (evaluated and their rows written, or dropped for good): the log's `done`.
        self.on_finished: Callable[[list[str]], None] | None = None
        self.rows = RowWaits(self)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._emptied = asyncio.Event()
        self._emptied.set()
        self._closed = False

    @classmethod
    def from_config(
        cls,
        config: EvaluationConfig,
        slots: Sequence[WorkerSlot],
        record: Record,
        count_dropped: CountDropped,
        *,
        count_restart: Callable[[], None] = lambda: None,
        on_store_report: OnStoreReport | None = None,
        on_new_signatures: OnNewSignatures | None = None,
        cores: int | None = None,
    ) -> EvaluationPool:
        """The pool of the `evaluation:` section (its queue size; stalled after four evaluator timeouts)."""
        return cls(
            slots,
            record,
            count_dropped,
            queue_size=config.queue_size,
            count_restart=count_restart,
            on_store_report=on_store_report,
            on_new_signatures=on_new_signatures,
            cores=cores,
            stall_seconds=stall_limit(config.timeout),
        )

    @property
    def workers(self) -> int:
        return len(self.slots)

    @property
    def accepting(self) -> bool:
        return not self._closed

    @property
    def waiting(self) -> int:
        """Traces queued for a worker, not yet sent to it."""
        return sum(len(slot.queued) for slot in self.slots)

    @property
    def free_slots(self) -> int:
        return self.queue_size - self.waiting

    @property
    def depth(self) -> int:
        return self.held

    # --- lifecycle ------------------------------------------------------------------------------
    async def start(self) -> None:
        """Start every worker and wait until each has answered (its evaluators built), then measure their capacity."""
        self._loop = self.rows.loop = asyncio.get_running_loop()
        await start_workers(self.slots)
        await measure_workers(self.slots)
        measured = [slot.measured_capacity for slot in self.slots if slot.measured_capacity > 0]
        if measured:
            # Measured alone on an idle daemon; under load the workers share the cores with ingest.
            share = min(1.0, max(self.cores - MAIN_PROCESS_CORES, MAIN_PROCESS_CORES) / len(self.slots))
            self.capacity = min(measured) * len(self.slots) * share
        log.info("evaluation: %d worker%s, first capacity estimate %.0f spans/s",
                 self.workers, "s" if self.workers != 1 else "", self.capacity)  # fmt: skip

    async def drain(self, timeout: float) -> int:
        """Wait until every held trace is evaluated, up to `timeout`, then, within it, until their rows are written
        (RowWaits.drain); returns how many were not evaluated."""
        deadline = self.clock() + max(timeout, 0.0)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._emptied.wait(), timeout=max(timeout, 0.0))
        await self.rows.drain(self.slots, deadline - self.clock())
        return self.held

    async def shutdown(self, grace: float) -> None:
        """Stop taking results and stop every worker (waiting up to `grace` for a running batch). Idempotent."""
        self._closed = self.rows.closed = True
        await stop_workers(self.slots, grace)
        for slot in self.slots:
            slot.queued.clear()
        self.spans_held = 0

    # --- work -----------------------------------------------------------------------------------
    def submit(self, completed: CompletedTrace) -> bool:
        """Queue a completed trace for the worker its trace id picks; False only once the pool is shut down."""
        if self._closed:
            return False
        slot = self.slots[route(completed.trace_id, len(self.slots))]
        slot.queued.append(completed)
        self.held += 1
        self.spans_held += len(completed.spans)
        self._emptied.clear()
        self._pump(slot)
        return True

    def _pump(self, slot: WorkerSlot) -> None:
        while slot.queued and slot.in_flight < BATCHES_IN_FLIGHT and not slot.paused and slot.executor is not None:
            size = min(self.batch_size, len(slot.queued))
            batch = [slot.queued.popleft() for _ in range(size)]
            executor = slot.executor
            try:
                future = slot.submit(batch)
            except (BrokenExecutor, RuntimeError) as exc:  # broke between two batches
                slot.queued.extendleft(reversed(batch))
                self._restart(slot, executor, exc)
                return
            if slot.in_flight == 0:
                slot.progress_at = self.clock()
            slot.in_flight += 1
            future.add_done_callback(functools.partial(self._finished_threadsafe, slot, executor, batch))

    def _finished_threadsafe(
        self, slot: WorkerSlot, executor: Executor, batch: list[CompletedTrace], future: Future
    ) -> None:
        """Runs on the executor's thread: hand the finished batch to the event loop."""
        assert self._loop is not None
        with contextlib.suppress(RuntimeError):  # the loop is closed: nothing is waiting any more
            self._loop.call_soon_threadsafe(self._finished, slot, executor, batch, future)

    def _finished(self, slot: WorkerSlot, executor: Executor, batch: list[CompletedTrace], future: Future) -> None:
        slot.in_flight -= 1
        slot.progress_at = self.clock()
        if self._closed:
            return
        self.held -= len(batch)
        spans = sum(len(c.spans) for c in batch)
        self.spans_held -= spans
        error = future.exception() if not future.cancelled() else BrokenExecutorCancelled()
        finished = [completed.trace_id for completed in batch]
        if error is None:
            slot.crashes_in_a_row = 0
            result: BatchResult = future.result()
            busy_seconds = result.seconds
            now = time.monotonic()
            if slot.back_to_back_since is not None:  # this batch was already waiting in the worker: no idle gap
                busy_seconds = max(busy_seconds, now - slot.back_to_back_since)
            self._measure(slot, spans, busy_seconds)
            slot.back_to_back_since = now if slot.in_flight > 0 else None
            self._deliver(result, len(batch))
            finished = self.rows.finished(slot, result, finished)
        elif isinstance(error, BrokenExecutor | BrokenExecutorCancelled):
            self.count_dropped("worker_stalled" if executor is slot.stalled else "worker_crash", len(batch))
            self._restart(slot, executor, error)
        else:
            log.error("evaluation batch of %d traces failed: %r", len(batch), error)
            self.count_dropped("evaluation_error", len(batch))
        for completed in batch:
            if completed.on_done is not None:
                completed.on_done()
        tell_finished(self.on_finished, finished)
        if self.held == 0:
            self._emptied.set()
        self._pump(slot)

    def _deliver(self, result: BatchResult, traces: int) -> None:
        """A batch's metrics tally to `record`, its worker store's report to `on_store_report`, the signatures
        that store counted new to `on_new_signatures`."""
        tally = MetricsTally.from_wire(result.tally)
        self.evaluated += tally.evaluated
        try:
            self.record(tally)
        except Exception:
            log.exception("could not record the results of %d traces", traces)
        store_side(result, self.on_store_report, self.on_new_signatures)

    def _measure(self, slot: WorkerSlot, spans: int, busy_seconds: float) -> None:
        """Capacity from the batches themselves: each worker's rate (`WorkerSlot.measure`) summed over the workers.
        Batch time is the worker's wall time for it (a worker that loses the CPU to ingest or to other workers
        measures slower) or, when the batch was queued behind the previous one, the time between the two coming
        back (hand-offs included), whichever is longer. Known from the first batch back."""
        if spans <= 0 or busy_seconds <= 0:
            return
        slot.measure(spans, busy_seconds, RATE_WEIGHT)
        rates = [s.rate for s in self.slots if s.rate > 0]
        self.capacity = sum(rates) * len(self.slots) / len(rates)  # workers not yet measured: like the others

    def check_stalled(self) -> int:
        """Kill every worker process that has had a batch for `stall_seconds` without returning one; returns how
        many were killed (their batches then fail as a crash would, counted as `worker_stalled`)."""
        now = self.clock()
        return sum(slot.kill_if_stalled(now, self.stall_seconds) for slot in self.slots)

    def _restart(self, slot: WorkerSlot, broken: Executor, error: BaseException) -> None:
        """Replace the slot's worker unless that already happened (several batches fail with one crash)."""
        if slot.executor is not broken or self._closed:
            return
        tell_finished(self.on_finished, self.rows.lost(slot))  # the rows it still held died with it
        slot.crashes_in_a_row += 1
        self.restarts += 1
        self.count_restart()
        delay = slot.restart_delay()
        log.error("evaluation worker %d died (%s); %d traces queued for it; restarting%s", slot.index,
                  type(error).__name__, len(slot.queued), f" in {delay:.0f}s" if delay else "")  # fmt: skip
        slot.stop(wait=False)
        slot.stall_logged = False
        slot.paused = True
        assert self._loop is not None
        self._loop.call_later(delay, self._resume, slot)

    def _resume(self, slot: WorkerSlot) -> None:
        if self._closed:
            return
        slot.paused = False
        slot.start()  # the first batch waits behind the new worker's start-up
        self._pump(slot)


class BrokenExecutorCancelled(Exception):
    """A batch future cancelled because its worker was replaced."""


def route(trace_id: str, slots: int) -> int:
    """The slot of a trace: its id's low 32 bits (ids are random hex), else a stable hash of the text."""
    if slots == 1:
        return 0
    try:
        return int(trace_id[-8:], 16) % slots
    except ValueError:
        return sum(trace_id.encode()) % slots
