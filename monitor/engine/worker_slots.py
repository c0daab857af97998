"""Evaluation worker slots: one single-worker executor each, a process (`evaluation.workers` ≥ 2) or one thread of
this process (0 or 1), and how the workers start, measure their capacity, stop and are killed.

What goes to which slot, and what happens to a batch's result, is the pool's business (pool.py). Here: starting
every worker and waiting until each answers (`start_workers`), measuring each in turn (`measure_workers`),
stopping them within a grace and killing what does not stop (`stop_workers`), and killing a worker process that
has had a batch for too long (`WorkerSlot.kill_if_stalled`). A thread cannot be killed: a stuck in-process
worker is only logged, and the CLI exits past it (`stuck_evaluation_threads`).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import multiprocessing
import os
import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from typing import Any, ParamSpec

from monitor.config import MonitorConfig
from monitor.engine import worker_process
from monitor.engine.assembler import CompletedTrace
from monitor.engine.batch_run import BatchRun, Settlement, StoreWrite
from monitor.engine.capacity_probe import spans_per_second
from monitor.engine.trace_evaluation import TraceEvaluator
from monitor.engine.trace_wire import traces_to_wire
from monitor.export.exporter import EvaluationExporter

log = logging.getLogger(__name__)
_P = ParamSpec("_P")

START_TIMEOUT_SECONDS = 120.0
MAX_RESTART_DELAY_SECONDS = 30.0
THREAD_PREFIX = "evaluation"


class EvaluationStartError(Exception):
    """The evaluation workers could not be started (the daemon cannot run)."""


class WorkerSlot:
    """One evaluation worker and the traces queued for it."""

    def __init__(
        self,
        index: int,
        make_executor: Callable[[], Executor],
        run_batch: Callable,
        ping: Callable,
        measure_capacity: Callable[[], float],
        encode: Callable[[list[CompletedTrace]], Any] = list,
        report: Callable | None = None,
    ) -> None:
        """`report`: the worker store's side alone (`BatchRun.report`), asked for between batches while
        evaluated traces wait for their rows."""
        self.index = index
        self.encode = encode  # a batch → what `run_batch` takes
        self._make_executor = make_executor
        self._run_batch = run_batch
        self._ping = ping
        self._measure_capacity = measure_capacity
        self._report = report
        self.unwritten: set[str] = set()  # traces evaluated here whose rows still wait to be written
        self.reporting = False  # a `report` asked for and not back yet (or one scheduled)
        self.executor: Executor | None = None
        self.pid: int | None = None  # the worker's process id once it has answered (this process for a thread)
        self.measured_capacity = 0.0  # spans/s the worker evaluated at start (capacity_probe.py)
        self.rate = 0.0  # spans/s while busy (wall time, so contention counts): busy_spans / busy_seconds
        self.busy_spans = 0.0  # moving sums over its batches (pool._measure)
        self.busy_seconds = 0.0
        self.back_to_back_since: float | None = None  # when the last batch came back with the next one queued
        self.queued: deque[CompletedTrace] = deque()
        self.in_flight = 0  # batches
        self.crashes_in_a_row = 0
        self.paused = False
        self.progress_at = 0.0  # time.monotonic() of the last batch sent to an idle worker or returned by it
        self.stalled: Executor | None = None  # the worker the stall check killed: its batches count as worker_stalled
        self.stall_logged = False

    def start(self) -> Future:
        """A fresh worker; the future completes (with its pid) once it answers."""
        self.executor = self._make_executor()
        future = self.executor.submit(self._ping)
        future.add_done_callback(self._answered)
        return future

    def _answered(self, future: Future) -> None:
        if not future.cancelled() and future.exception() is None:
            self.pid = future.result()

    def measure_capacity(self) -> Future:
        """The worker's spans/s on typical traces (run one worker at a time, on an otherwise idle daemon)."""
        assert self.executor is not None
        return self.executor.submit(self._measure_capacity)

    def submit(self, batch: list[CompletedTrace]) -> Future:
        assert self.executor is not None
        return self.executor.submit(self._run_batch, self.encode(batch))

    def submit_report(self) -> Future | None:
        """Ask the worker for its store's side alone (None without a `report`, or no worker)."""
        if self._report is None or self.executor is None:
            return None
        return self.executor.submit(self._report)

    def measure(self, spans: int, seconds: float, weight: float) -> None:
        """Take a batch of `spans` that kept the worker busy `seconds` into its rate: its spans over its batch
        seconds, both as moving sums over its batches (each batch weighs `weight` in them). Weighted by work, not
        by batch: a short queue sends many small batches whose fixed cost (a few ms: the hand-off, the store's
        commit) says nothing about how fast a backlog goes. Averaging the batches' own rates instead read half
        the capacity on the bench, and admission then throttled workers that were idle a third of the time."""
        keep = 1 - weight if self.rate > 0 else 0.0
        self.busy_spans = keep * self.busy_spans + spans
        self.busy_seconds = keep * self.busy_seconds + seconds
        self.rate = self.busy_spans / self.busy_seconds

    def stop(self, wait: bool) -> None:
        executor, self.executor = self.executor, None
        if executor is not None:
            executor.shutdown(wait=wait, cancel_futures=True)

    def restart_delay(self) -> float:
        """How long to wait before replacing a worker that died: none the first time, then doubling, capped."""
        repeated = self.crashes_in_a_row - 1
        return min(2.0**repeated, MAX_RESTART_DELAY_SECONDS) if repeated > 0 else 0.0

    def kill_if_stalled(self, now: float, stall_seconds: float) -> bool:
        """Kill the worker process when it has had a batch for `stall_seconds` without returning one (its batches
        then fail as a crash would); whether it was killed. A thread cannot be: it is logged once."""
        busy_for = now - self.progress_at
        if self.in_flight == 0 or self.executor is None or self.stalled is self.executor or busy_for < stall_seconds:
            return False
        if not _processes(self.executor):
            if not self.stall_logged:
                self.stall_logged = True
                log.error(
                    "evaluation worker %d (in-process) has returned nothing for %.0fs: an evaluator never "
                    "returns; the traces routed to it wait",
                    self.index,
                    busy_for,
                )
            return False
        log.error(
            "evaluation worker %d has returned nothing for %.0fs (an evaluator that never returns?): killing it",
            self.index,
            busy_for,
        )
        self.stalled = self.executor
        _kill(self.executor)
        return True


PIPE_BYTES = 1 << 20  # Linux's default /proc/sys/fs/pipe-max-size: what an unprivileged process may set


def widen_pipes(executor: ProcessPoolExecutor) -> None:
    """Give the pipes between this process and the worker room for what they carry (1 MiB each; the kernel's
    default is 64 KiB): two batches out (a batch of 64 agent traces is about 470 KiB), a batch's result back
    (about 65 KiB). In 64 KiB pipes the executor's feeder thread wrote the next batch only as the worker read it,
    and the worker's result waited for this process to read it (its GIL busy with ingest). Measured under the
    bench's backlog, a worker's time between two batches went from 19.6 % to 17 % of its time with it (single
    runs); most of what is left is the worker's own writer thread holding the GIL and batches not yet due. Where
    a pipe cannot be widened (not Linux, a lower limit) it stays as it is."""
    set_size = getattr(fcntl, "F_SETPIPE_SZ", None)
    if set_size is None:
        return
    for queue in (getattr(executor, "_call_queue", None), getattr(executor, "_result_queue", None)):
        end = getattr(queue, "_writer", None)  # multiprocessing's queues: one pipe each
        if end is not None:
            with contextlib.suppress(OSError, ValueError):
                fcntl.fcntl(end.fileno(), set_size, PIPE_BYTES)


def process_slots(config: MonitorConfig, count: int) -> list[WorkerSlot]:
    """`count` worker processes (spawned: forking a process that runs gRPC threads is unsafe). Batches go in
    their wire form (trace_wire.py), which pickles much faster than the records."""
    context = multiprocessing.get_context("spawn")

    def make() -> Executor:
        executor = ProcessPoolExecutor(
            max_workers=1,
            mp_context=context,
            initializer=worker_process.initialize,
            initargs=(config, os.getpid()),
        )
        widen_pipes(executor)
        return executor

    return [
        WorkerSlot(
            i,
            make,
            worker_process.evaluate_batch,
            worker_process.ping,
            worker_process.measure_capacity,
            encode=traces_to_wire,
            report=worker_process.report,
        )
        for i in range(count)
    ]


def thread_slot(
    evaluator: TraceEvaluator,
    write: StoreWrite | None = None,
    settlement: Settlement | None = None,
    exporter: EvaluationExporter | None = None,
) -> list[WorkerSlot]:
    """One in-process worker thread (`evaluation.workers` 0 or 1: tests and small installs); `write` stores
    the evaluated traces (the daemon's result store), `settlement` is that store's with the intake log on,
    `exporter` the daemon's evaluation exporter."""

    def make() -> Executor:
        return ThreadPoolExecutor(max_workers=1, thread_name_prefix=THREAD_PREFIX)

    run = BatchRun(evaluator, write, settlement=settlement, exporter=exporter)
    return [WorkerSlot(0, make, run, os.getpid, lambda: spans_per_second(evaluator), report=run.report)]


async def start_workers(slots: Sequence[WorkerSlot]) -> None:
    """Start every worker and wait until each has answered (its evaluators built); EvaluationStartError, with
    every worker stopped, when one does not."""
    started = [asyncio.wrap_future(slot.start()) for slot in slots]
    try:
        await asyncio.wait_for(asyncio.gather(*started), START_TIMEOUT_SECONDS)
    except Exception as exc:
        for slot in slots:
            slot.stop(wait=False)
        detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        raise EvaluationStartError(f"evaluation workers failed to start: {detail}") from exc


async def measure_workers(slots: Sequence[WorkerSlot]) -> None:
    """Each worker's `measured_capacity` (spans/s), one after the other, so none measures while another computes."""
    for slot in slots:
        try:
            slot.measured_capacity = await asyncio.wait_for(
                asyncio.wrap_future(slot.measure_capacity()), START_TIMEOUT_SECONDS
            )
        except Exception as exc:  # a worker that cannot measure still evaluates; real batches will tell
            log.warning("evaluation worker %d could not measure its capacity: %r", slot.index, exc)


async def stop_workers(slots: Sequence[WorkerSlot], grace: float) -> None:
    """Stop every worker, waiting up to `grace` for a running batch; kill the processes that do not stop."""
    executors = [slot.executor for slot in slots if slot.executor is not None]
    # Not asyncio.to_thread: a stop that never returns (a thread stuck in an evaluator) would hold the loop's
    # default executor, which asyncio.run joins at the end, and the daemon would never exit.
    waits = [asyncio.ensure_future(_in_daemon_thread(slot.stop, True)) for slot in slots if slot.executor]
    if not waits:
        return
    done, _ = await asyncio.wait(waits, timeout=max(grace, 0.1))
    if len(done) < len(waits):
        # A worker stuck in an evaluator would keep the process from exiting (the executor joins it).
        log.warning("evaluation workers did not stop within %.1fs: killing them", grace)
        killed = sum(_kill(executor) for executor in executors)
        if killed:  # a thread cannot be killed: the daemon exits past it (cli.py)
            await asyncio.wait(waits, timeout=5.0)


def _processes(executor: Executor) -> dict[Any, Any]:
    """The worker processes of an executor (ProcessPoolExecutor's own table; none for a thread)."""
    return getattr(executor, "_processes", None) or {}


def _kill(executor: Executor) -> int:
    """Kill the executor's worker processes; how many."""
    processes = list(_processes(executor).values())
    for process in processes:
        process.kill()
    return len(processes)


async def _in_daemon_thread(function: Callable[_P, object], *args: _P.args, **kwargs: _P.kwargs) -> None:
    """`function(*args, **kwargs)` on a daemon thread of its own (never joined at exit), awaited from the loop."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def finished() -> None:
        if not done.done():
            done.set_result(None)

    def run() -> None:
        try:
            function(*args, **kwargs)
        finally:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
                loop.call_soon_threadsafe(finished)

    threading.Thread(target=run, name="stop-evaluation-worker", daemon=True).start()
    await done


def stuck_evaluation_threads() -> list[str]:
    """In-process evaluation threads still running (an evaluator that never returned). The interpreter joins
    executor threads at exit, so with one of these alive a normal exit would never end."""
    return [t.name for t in threading.enumerate() if t.name.startswith(THREAD_PREFIX) and t.is_alive()]
