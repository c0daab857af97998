"""The parts bench_stages times, built as the daemon builds them, and its CPU stopwatch.

`Parts`: the main process's stages from a real `Daemon(MonitorConfig())` (constructed, never started: no receiver,
no worker process), its store and intake log in a temporary directory; the worker's as `worker_process.initialize`
builds them (the default evaluators, `TraceEvaluator.from_config`, a `BatchRun` on the worker's own store writer,
`_store_writer`). `Cpu` sums `time.process_time` per stage: every thread of the process, so the work the store's
writer thread does for a write the worker waits on is counted where it is asked for; the collector's pauses are a
stage of their own.
"""

from __future__ import annotations

import contextlib
import gc
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from monitor.config import MonitorConfig
from monitor.daemon import Daemon
from monitor.engine.batch_run import BatchRun
from monitor.engine.evaluator_setup import build_evaluators
from monitor.engine.gc_tuning import YOUNG_THRESHOLD, tune_gc
from monitor.engine.trace_evaluation import TraceEvaluator
from monitor.engine.worker_process import _exporter, _store_writer
from tests.bench.synthetic import bench_trace_spans, export_request

T = TypeVar("T")
REQUEST_TRACES = 50  # traces per export request: the load generator's default (--batch 50)
WORKER_GC = (YOUNG_THRESHOLD, 20, 100)  # what tune_gc() sets in a worker process


@dataclass
class Cpu:
    """CPU seconds per stage (`stages`), per evaluator's first run on a trace (`evaluators`: the views it is the
    first to ask for included) and per evaluator's run on views already built (`views_built`), each in the order
    first timed. Pieces are timed as laps (`start`, then `lap` after each piece: one clock read between two), each
    less `overhead`, what one lap costs with nothing in it (`lap_overhead`). Within `collecting(stage)` the
    collector's pauses go to `stage`, not to the lap they fall in (whichever allocation happens to trigger one)."""

    overhead: float = 0.0
    stages: dict[str, float] = field(default_factory=dict)
    evaluators: dict[str, float] = field(default_factory=dict)
    views_built: dict[str, float] = field(default_factory=dict)
    _last: float = 0.0
    _paused: float = 0.0  # the collector's pauses since the last lap
    _gc_stage: str = ""
    _gc_began: float = 0.0

    def start(self) -> None:
        self._last = time.process_time()
        self._paused = 0.0

    def lap(self, key: str, book: dict[str, float] | None = None) -> None:
        """What ran since the last lap (or `start`) to `key` of `book` (`stages` when None)."""
        now = time.process_time()
        book = self.stages if book is None else book
        book[key] = book.get(key, 0.0) + (now - self._last - self.overhead - self._paused)
        self._last = now
        self._paused = 0.0

    def __call__(self, stage: str, work: Callable[..., T], *args: Any) -> T:
        """`work(*args)` timed as one lap of its own."""
        self.start()
        result = work(*args)
        self.lap(stage)
        return result

    @contextlib.contextmanager
    def collecting(self, stage: str) -> Iterator[None]:
        """The collector's pauses meanwhile to `stage`."""
        self._gc_stage = stage
        gc.callbacks.append(self._collector)
        try:
            yield
        finally:
            gc.callbacks.remove(self._collector)

    def _collector(self, phase: str, info: dict[str, int]) -> None:
        now = time.process_time()
        if phase == "start":
            self._gc_began = now
            return
        paused = now - self._gc_began
        self.stages[self._gc_stage] = self.stages.get(self._gc_stage, 0.0) + paused
        self._paused += paused


def lap_overhead(laps: int = 20_000, rounds: int = 5) -> float:
    """The CPU seconds of an empty lap (a clock read, the bookkeeping): the median of `rounds` means."""
    means = []
    for _ in range(rounds):
        cpu = Cpu()
        cpu.start()
        for _ in range(laps):
            cpu.lap("empty")
        means.append(cpu.stages["empty"] / laps)
    return statistics.median(means)


class Parts:
    """The daemon's main-process stages and a worker's, in one process (see the module docstring)."""

    def __init__(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="bench-stages-"))
        config = MonitorConfig()
        config.store.path = str(self.directory / "results.db")  # intake.wal.path "": intake/ beside it
        self.config = config
        self.daemon = Daemon(config)
        assert self.daemon.intake.log is not None and self.daemon.sessions is not None  # both on by default
        self.log = self.daemon.intake.log
        self.log.open()  # what IntakeLog.start does off the loop: the directory, the writer's threads
        built, problems = build_evaluators(config.evaluator_entries(), config.pricing.overrides())
        if problems:
            raise RuntimeError(f"the default evaluators did not build: {problems}")
        self.evaluator = TraceEvaluator.from_config(built, config)
        if any(self.evaluator._is_judge.values()):
            raise RuntimeError("an LLM judge in the default set: the bench does not prepare judge jobs")
        self.run = BatchRun(self.evaluator, *_store_writer(config), exporter=_exporter(config))
        self.main_gc = gc.get_threshold()  # restored by `as_main`

    @property
    def worker_store(self) -> Any:
        """The worker's own result store, behind `run.write` (worker_process.BatchWriter); None without a store."""
        return None if self.run.write is None else self.run.write.store  # type: ignore[attr-defined]

    def tune_gc(self) -> None:
        """The collector as the daemon's main process sets it (start-up objects frozen); `as_worker` and
        `as_main` then switch between its thresholds and a worker's."""
        tune_gc(collect_less_often=False)
        self.main_gc = gc.get_threshold()

    def as_worker(self) -> None:
        gc.set_threshold(*WORKER_GC)

    def as_main(self) -> None:
        gc.set_threshold(*self.main_gc)

    def close(self) -> None:
        self.log.writer.stop()
        if self.worker_store is not None:
            self.worker_store.close()
        if self.daemon.store is not None:
            self.daemon.store.close()
        if self.daemon.review is not None:
            self.daemon.review.close()
        shutil.rmtree(self.directory, ignore_errors=True)


def requests_of(traces: int) -> list[bytes]:
    """Export requests of REQUEST_TRACES fresh 7-span traces each (the load generator's: variant = position in
    the request), serialized."""
    start = time.time_ns() - 3_000_000_000
    payloads = []
    for first in range(0, traces, REQUEST_TRACES):
        count = min(REQUEST_TRACES, traces - first)
        spans = [span for i in range(count) for span in bench_trace_spans(os.urandom(16), start, i)]
        payloads.append(export_request(spans).SerializeToString())
    return payloads
