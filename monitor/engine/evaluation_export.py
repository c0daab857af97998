"""The daemon's side of `export.evaluations` (daemon.py wires it from here): the main process's evaluation exporter
(late results of the LLM judges, evaluated sessions, and with 0 or 1 worker the evaluated traces), its counts taken
at each scrape, the lifecycle part that closes it, and the evaluation workers that get it."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING

from monitor.config import MonitorConfig
from monitor.engine.configured import ConfiguredEvaluator
from monitor.engine.trace_evaluation import TraceEvaluator
from monitor.engine.worker_slots import WorkerSlot, process_slots, thread_slot
from monitor.export.counts import EXPORTS
from monitor.export.exporter import EvaluationExporter
from monitor.export.from_config import exporter_of

if TYPE_CHECKING:
    from monitor.metrics import MetricsExporter
    from monitor.store.writer import QueuedResultStore


def main_exporter(config: MonitorConfig, metrics: MetricsExporter) -> EvaluationExporter | None:
    """The main process's exporter (None when off); its counts (and the in-process worker's) go to
    `agent_monitor_evaluation_exports_total` at each scrape."""
    metrics.exports.observe(EXPORTS.take)
    return exporter_of(config)


class ExportPart:
    """The exporter as a lifecycle component: nothing to start; shutdown sends what is queued within its grace."""

    def __init__(self, exporter: EvaluationExporter) -> None:
        self.exporter = exporter
        self._closed = False

    async def start(self) -> None:
        """Its thread runs from construction."""

    async def shutdown(self, grace: float) -> None:
        if self._closed:
            return
        self._closed = True
        await asyncio.to_thread(self.exporter.close, grace)


def evaluation_slots(
    config: MonitorConfig,
    evaluators: list[ConfiguredEvaluator],
    store: QueuedResultStore | None,
    exporter: EvaluationExporter | None = None,
) -> Sequence[WorkerSlot]:
    """The evaluation workers: processes (each with its own exporter), or with 0 or 1 worker one thread in this
    process, writing to `store` and offering to `exporter` (the main process's)."""
    workers = config.evaluation.worker_count()
    if workers > 1:
        return process_slots(config, workers)
    evaluator, wal = TraceEvaluator.from_config(evaluators, config), config.intake.wal.enabled
    if store is None:
        return thread_slot(evaluator, exporter=exporter)
    return thread_slot(evaluator, store.write, store.settlement if wal else None, exporter=exporter)
