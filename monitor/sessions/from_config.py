"""The daemon's session tracker from its config: open sessions kept in the result store (`StoredSessionTracker`:
SQLite's file, or PostgreSQL's shared by every replica with `sessions.shared`), or in memory (`SessionTracker`:
the store disabled, or `sessions.shared: false` with PostgreSQL), cut at shutdown."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from evaluators.judges import JudgeCall
from monitor.config.models import MonitorConfig
from monitor.engine.configured import ConfiguredEvaluator
from monitor.engine.pending import PendingKeeper
from monitor.engine.signing import Signer
from monitor.export.exporter import EvaluationExporter
from monitor.export.tee import offering, tee
from monitor.metrics.sessions import SessionMetrics
from monitor.metrics.tally import MetricsTally
from monitor.sessions.evaluation import SessionEvaluation, is_session_level
from monitor.sessions.judging import SessionJudging
from monitor.sessions.shared import StoredSessionTracker
from monitor.sessions.storing import session_writer
from monitor.sessions.tracker import SessionTracker
from monitor.store.postgres.store import PostgresResultStore
from monitor.store.writer import QueuedResultStore

log = logging.getLogger(__name__)


def tracker_of(
    config: MonitorConfig,
    evaluators: Sequence[ConfiguredEvaluator],
    telemetry: SessionMetrics,
    apply_tally: Callable[[MetricsTally], None],
    judge_call: JudgeCall | None = None,
    store: QueuedResultStore | None = None,
    keeper: PendingKeeper | None = None,
    exporter: EvaluationExporter | None = None,
) -> SessionTracker | None:
    """The daemon's tracker: `sessions:` and the session-level evaluators of `evaluators` (their timeout and
        failure signatures as at the other levels); None when `sessions.enabled` is off. Session-level LLM judges go
        through `judge_call` (the daemon's judge engine) via `SessionJudging`; evaluated sessions and their results
        (the rules' and the judges') to the result `store`. With a store, the open sessions live in it (a restart
        neither cuts nor splits them); with PostgreSQL (and `sessions.shared`) shared by every replica, each evaluated
        by the one that claims it. Without a store they are held in memory and cut at shutdown. `keeper`: where the
    sessions waiting for their LLM judges are kept (monitor/engine/pending.py); `exporter`: the main process's
    evaluation exporter, offered every evaluated session's results (None: off)."""
    if not config.sessions.enabled:
        if any(is_session_level(c) for c in evaluators):
            log.warning("session-level evaluators configured but sessions.enabled is false: they are not run")
        return None
    evaluation = SessionEvaluation(
        evaluators, timeout_seconds=config.evaluation.timeout, signer=Signer(config.signatures.compiled_rules())
    )
    write = tee(store.write if store is not None else None, exporter)
    stored = session_writer(write) if write is not None else None
    judging = (
        SessionJudging(judge_call, apply_tally, evaluation.signer, on_judged=stored, keeper=keeper)
        if judge_call and evaluation.judges
        else None
    )
    if keeps_sessions(config, store):
        assert store is not None
        exported = session_writer(offering(exporter)) if exporter is not None else None
        return StoredSessionTracker(
            config.sessions, evaluation, apply_tally, store, telemetry, judge_sessions=judging, on_evaluated=exported
        )
    return SessionTracker(
        config.sessions, evaluation, apply_tally, telemetry, judge_sessions=judging, on_evaluated=stored
    )


def keeps_sessions(config: MonitorConfig, store: QueuedResultStore | None) -> bool:
    """Whether the open sessions live in `store`: SQLite's always, PostgreSQL's with `sessions.shared`."""
    if store is None or store.open_session_tables is None:
        return False
    return config.sessions.shared or not isinstance(store, PostgresResultStore)
