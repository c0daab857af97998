"""The daemon's intake log from the config: the log, the receivers' consumer in front of the ingestor, the
start-up replay, and the pool's report of finished traces wired to the log's `done`."""

from __future__ import annotations

from dataclasses import dataclass

from monitor.config import MonitorConfig
from monitor.consumer import TraceConsumer
from monitor.engine.assembler import CompletedTrace, TraceAssembler
from monitor.engine.ingest import Ingestor
from monitor.engine.pool import EvaluationPool
from monitor.intake.consumer import LoggedConsumer
from monitor.intake.log import IntakeLog
from monitor.intake.replay import IntakeReplay
from monitor.metrics.intake_log import IntakeLogMetrics
from monitor.store.writer import QueuedResultStore

BARRIER_SECONDS = 10.0  # the longest a release waits for the store's writer to catch up


@dataclass(slots=True)
class Intake:
    consumer: TraceConsumer
    log: IntakeLog | None = None
    replay: IntakeReplay | None = None


def intake_of(
    config: MonitorConfig,
    ingestor: Ingestor,
    assembler: TraceAssembler,
    pool: EvaluationPool,
    store: QueuedResultStore | None,
    metrics: IntakeLogMetrics,
) -> Intake:
    """The ingestor alone when `intake.wal.enabled` is false."""
    wal = config.intake.wal
    if not wal.enabled:
        return Intake(ingestor)
    barrier = (lambda: store.flush(BARRIER_SECONDS)) if store is not None else (lambda: None)
    log = IntakeLog(wal, wal.directory(config.store.path), metrics, barrier=barrier)

    def finished(batch: list[CompletedTrace]) -> None:
        log.done(completed.trace_id for completed in batch)

    pool.on_finished = finished
    stored = store.stored_trace_ids if store is not None else None
    return Intake(LoggedConsumer(ingestor, log, assembler), log, IntakeReplay(log, ingestor, assembler, stored))
