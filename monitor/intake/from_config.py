"""The daemon's intake log from the config: the log, the receivers' consumer in front of the ingestor, the
start-up replay, and the pool's report of finished traces (evaluated and their rows written, or dropped for good:
pool.py, rows_waits.py) wired to the log's `done`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from monitor.config import MonitorConfig
from monitor.consumer import TraceConsumer
from monitor.engine.assembler import TraceAssembler
from monitor.engine.ingest import Ingestor
from monitor.engine.pool import EvaluationPool
from monitor.intake.consumer import LoggedConsumer
from monitor.intake.log import IntakeLog
from monitor.intake.replay import IntakeReplay
from monitor.metrics.intake_log import IntakeLogMetrics
from monitor.store.writer import QueuedResultStore

BARRIER_SECONDS = 10.0  # the longest a release waits for the store's writer, the turns (then it tries again later)


@dataclass(slots=True)
class Intake:
    consumer: TraceConsumer
    log: IntakeLog | None = None
    replay: IntakeReplay | None = None


class TurnKeeper(Protocol):
    """The conversation tracker (monitor.sessions): waits until the turns added so far are kept."""

    def flush_turns(self, timeout: float) -> bool: ...


class Stages(Protocol):
    """The daemon's stages the intake log is wired to."""

    @property
    def ingestor(self) -> Ingestor: ...
    @property
    def assembler(self) -> TraceAssembler: ...
    @property
    def pool(self) -> EvaluationPool: ...
    @property
    def store(self) -> QueuedResultStore | None: ...
    @property
    def sessions(self) -> TurnKeeper | None: ...


def intake_of(config: MonitorConfig, stages: Stages, metrics: IntakeLogMetrics) -> Intake:
    """The ingestor alone when `intake.wal.enabled` is false. A trace is done once the pool has its rows written
    (the stores keep what they could not write and try again: `hold_unwritten`), and a segment is deleted once
    the daemon's own store writer has handled what it was handed before (the waiting judgements kept from the
    batches' reports) and the conversation tracker has kept the turns added before (a turn reaches it only after
    its trace is stored, so a turn lost after the release could not be replayed: its trace is in the store);
    until both have, the release waits and is tried again."""
    ingestor, assembler, store, sessions = stages.ingestor, stages.assembler, stages.store, stages.sessions
    wal = config.intake.wal
    if not wal.enabled:
        return Intake(ingestor)

    def barrier() -> bool:
        flushed = store is None or store.flush(BARRIER_SECONDS)
        return flushed and (sessions is None or sessions.flush_turns(BARRIER_SECONDS))

    log = IntakeLog(wal, wal.directory(config.store.path), metrics, barrier=barrier)
    stages.pool.on_finished = log.done
    stored = store.stored_trace_ids if store is not None else None
    pool = stages.pool
    consumer = LoggedConsumer(ingestor, log, assembler, store_behind=lambda: pool.rows.behind(pool.slots))
    return Intake(consumer, log, IntakeReplay(log, ingestor, assembler, stored))
