"""RowWaits: with the intake log on, the evaluated traces whose rows still wait to be written, per worker slot.

A batch's result says which of its traces wait (batch_run.BatchResult.unwritten: the worker's store is behind, or
the database is down) and which, of those before, are settled (their rows written, or lost for good). Those
waiting are told finished (the intake log's `done`) only once a later result says they are settled: the next
batch's, or, while the worker is idle, a `report` asked for every REPORT_SECONDS. A worker that dies takes the rows
it held with it: those traces are told finished then, and logged, so that the log is not held until the next start
by rows nobody will write.

A worker's store keeps MAX_KEPT_TRACES at most (write_queue.py; past it, rows are lost for good): once a worker
holds UNWRITTEN_LIMIT of them (`behind`), the intake log answers new requests throttled, so that the traces
already on their way (assembling, queued) still fit.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Callable
from concurrent.futures import BrokenExecutor, Executor, Future
from typing import Protocol

from monitor.engine.batch_run import BatchResult
from monitor.engine.worker_slots import WorkerSlot
from monitor.store.health import StoreReport
from monitor.store.writer import MAX_KEPT_TRACES

log = logging.getLogger(__name__)

REPORT_SECONDS = 0.25  # between two asks of an idle worker whose evaluated traces wait for their rows
DRAIN_SECONDS = 5.0  # at drain, how long the rows of evaluated traces may still take to be written
UNWRITTEN_LIMIT = MAX_KEPT_TRACES // 2  # evaluated traces waiting for their rows in one worker: intake throttled


OnStoreReport = Callable[[StoreReport], None]
OnNewSignatures = Callable[[str, str, int], None]  # (evaluator, service, signatures counted new)


class Owner(Protocol):
    """The pool: whom a report's finished traces, store health and new signatures go to."""

    on_finished: Callable[[list[str]], None] | None
    on_store_report: OnStoreReport | None
    on_new_signatures: OnNewSignatures | None


class RowWaits:
    def __init__(self, owner: Owner) -> None:
        self.owner = owner
        self.loop: asyncio.AbstractEventLoop | None = None  # set by the pool at start
        self.closed = False

    def behind(self, slots: list[WorkerSlot]) -> bool:
        """Whether a worker holds UNWRITTEN_LIMIT evaluated traces waiting for their rows (the store is down)."""
        return any(len(slot.unwritten) >= UNWRITTEN_LIMIT for slot in slots)

    async def drain(self, slots: list[WorkerSlot], timeout: float) -> None:
        """Wait, `timeout` and DRAIN_SECONDS at most, until no evaluated trace waits for its rows; those still
        waiting then are not finished: the intake log keeps them for the next start."""
        deadline = time.monotonic() + min(timeout, DRAIN_SECONDS)
        while any(slot.unwritten for slot in slots) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)

    def finished(self, slot: WorkerSlot, result: BatchResult, trace_ids: list[str]) -> list[str]:
        """The trace ids a result finishes: those of its batch (`trace_ids`) not waiting for their rows, and every
        one it says settled; the rest wait in `slot.unwritten` (and the worker is asked again)."""
        if result.unwritten is None:
            return trace_ids
        settled = set(result.settled)
        waiting = set(result.unwritten) - settled
        slot.unwritten -= settled
        slot.unwritten |= waiting
        if slot.unwritten:
            self._ask_later(slot)
        return [t for t in trace_ids if t not in waiting and t not in settled] + list(settled)

    def lost(self, slot: WorkerSlot) -> list[str]:
        """The traces whose rows a dead worker still held (lost with it), now finished; logged."""
        lost, slot.unwritten = list(slot.unwritten), set()
        slot.reporting = False
        if lost:
            log.error(
                "evaluation worker %d died with the rows of %d evaluated traces not yet written: they are lost",
                slot.index,
                len(lost),
            )
        return lost

    def _ask_later(self, slot: WorkerSlot) -> None:
        if slot.reporting or self.loop is None:
            return
        slot.reporting = True
        self.loop.call_later(REPORT_SECONDS, self._ask, slot)

    def _ask(self, slot: WorkerSlot) -> None:
        """Ask an idle worker for what its store settled (a busy one tells with its next batch)."""
        slot.reporting = False
        if self.closed or not slot.unwritten:
            return
        if slot.in_flight:
            self._ask_later(slot)
            return
        executor = slot.executor
        try:
            future = slot.submit_report()
        except (BrokenExecutor, RuntimeError):  # the worker died while idle: the pool replaces it at its next batch
            tell_finished(self.owner.on_finished, self.lost(slot))
            return
        if future is None:
            return
        slot.reporting = True
        future.add_done_callback(functools.partial(self._reported_threadsafe, slot, executor))

    def _reported_threadsafe(self, slot: WorkerSlot, executor: Executor | None, future: Future) -> None:
        if self.loop is None:
            return
        with contextlib.suppress(RuntimeError):  # the loop is closed: nothing is waiting any more
            self.loop.call_soon_threadsafe(self._reported, slot, executor, future)

    def _reported(self, slot: WorkerSlot, executor: Executor | None, future: Future) -> None:
        slot.reporting = False
        if self.closed or executor is not slot.executor or future.cancelled():
            return  # a worker replaced: what it held was let go then
        error = future.exception()
        if isinstance(error, BrokenExecutor):  # it died while idle
            tell_finished(self.owner.on_finished, self.lost(slot))
            return
        if error is not None:
            log.warning("evaluation worker %d could not report its store's writes: %r", slot.index, error)
            self._ask_later(slot)
            return
        result: BatchResult = future.result()
        owner = self.owner
        store_side(result, owner.on_store_report, owner.on_new_signatures)
        tell_finished(owner.on_finished, self.finished(slot, result, []))


def store_side(result: BatchResult, on_report: OnStoreReport | None, on_new: OnNewSignatures | None) -> None:
    """A batch's worker store report to `on_report`, the signatures that store counted new to `on_new`."""
    if result.store is not None and on_report is not None:
        try:
            on_report(result.store)
        except Exception:
            log.exception("could not apply an evaluation worker's result store report")
    if result.new_signatures and on_new is not None:
        try:
            for (evaluator, service), count in result.new_signatures.items():
                on_new(evaluator, service, count)
        except Exception:
            log.exception("could not count the failure signatures an evaluation worker's store counted new")


def tell_finished(on_finished: Callable[[list[str]], None] | None, trace_ids: list[str]) -> None:
    """Tell `on_finished` (the intake log's release) of traces the pool is done with; its failure is logged."""
    if on_finished is None or not trace_ids:
        return
    try:
        on_finished(trace_ids)
    except Exception:
        log.exception("could not release the intake log's hold on %d traces", len(trace_ids))
