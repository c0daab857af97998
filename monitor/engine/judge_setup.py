"""The daemon's LLM judge stages from its config: the judge engine and the stage that feeds it the traces'
judgements, the pairwise stage of `variants.pairwise`, and the pairwise judges as the review lists them."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from evaluators.judges import LLMJudge
from evaluators.judges.client import JudgeClient
from evaluators.judges.engine import JudgeEngine
from evaluators.judges.limits import JudgeLimits, SharedLimits
from monitor.config.models import MonitorConfig
from monitor.config.store import StoreConfig
from monitor.engine.configured import ConfiguredEvaluator
from monitor.engine.judge_stage import JudgeStage
from monitor.engine.pairwise_stage import PairwiseStage
from monitor.engine.pending import PendingKeeper
from monitor.engine.pending_resume import PendingResumer
from monitor.engine.signing import Signer
from monitor.export.exporter import EvaluationExporter
from monitor.export.tee import tee
from monitor.metrics import MetricsExporter
from monitor.metrics.tally import MetricsTally
from monitor.store.writer import QueuedResultStore

if TYPE_CHECKING:
    from evaluators.judges import PairwiseJudge

log = logging.getLogger(__name__)


class JudgingTracker(Protocol):
    """The conversation tracker (monitor.sessions.tracker.SessionTracker), as the resumer needs it."""

    judge_sessions: Any  # its session-level judges' hook (SessionJudging), or None
    evaluation: Any  # its SessionEvaluation: `judges`, the session-level LLM judges configured


def judge_stages(
    config: MonitorConfig,
    evaluators: Sequence[ConfiguredEvaluator],
    pairwise_judges: Mapping[str, PairwiseJudge],
    metrics: MetricsExporter,
    store: QueuedResultStore | None,
    apply_tally: Callable[[MetricsTally], None],
    exporter: EvaluationExporter | None = None,
) -> tuple[JudgeEngine, JudgeStage, PairwiseStage | None]:
    """The daemon's judging: the engine, the judge stage and the pairwise stage (None without
    `variants.pairwise`); their late results to the store and to `exporter` (the main process's, when on)."""
    engine, stage = judging_of(config, evaluators, pairwise_judges, metrics, store, apply_tally, exporter)
    pairwise = pairwise_of(config, pairwise_judges, engine, metrics, store, apply_tally, stage.keeper, exporter)
    return engine, stage, pairwise


def judging_of(
    config: MonitorConfig,
    evaluators: Sequence[ConfiguredEvaluator],
    pairwise_judges: Mapping[str, PairwiseJudge],
    metrics: MetricsExporter,
    store: QueuedResultStore | None,
    apply_tally: Callable[[MetricsTally], None],
    exporter: EvaluationExporter | None = None,
) -> tuple[JudgeEngine, JudgeStage]:
    """The judge engine and the stage that feeds it; judges configured without a key skip, with one warning."""
    settings = config.judges.settings()
    judges = {c.label: c.evaluator for c in evaluators if isinstance(c.evaluator, LLMJudge)}
    names = [*judges, *pairwise_judges]  # the pairwise judges use the same engine
    if names and not settings.enabled:
        log.warning(
            "LLM judges configured (%s) but no GEMINI_API_KEY / GOOGLE_API_KEY, judges.gemini_api_key or "
            "judges.vertex_project: every judgement is skipped as judge_unavailable",
            ", ".join(names),
        )
    client = JudgeClient(settings) if names and settings.enabled else None
    limits = shared_limits(config.store, metrics.judges.limit_fallback) if client is not None else None
    engine = JudgeEngine(settings, client, observer=metrics.judges, prices=config.pricing.overrides(), limits=limits)
    metrics.judges.observe_waiting(engine)
    keeps = store is not None and store.pending_tables is not None
    keeper = PendingKeeper(store, config.store.poll_lease) if keeps and store is not None else None
    stage = JudgeStage(
        judges,
        engine.judge,
        apply_tally,
        tee(store.write if store is not None else None, exporter),
        max_pending=settings.max_pending,
        signer=Signer(config.signatures.compiled_rules()),
        on_capacity_skip=metrics.judges.capacity_skip,
        keeper=keeper,
    )
    return engine, stage


def shared_limits(store: StoreConfig, on_fallback: Callable[[str], None]) -> JudgeLimits | None:
    """With a PostgreSQL store, limits that every replica on it shares (the judges' `requests_per_minute` and
    `daily_token_budget`, and each judge's own, hold for the deployment); None (each process's own) with SQLite."""
    if not store.enabled or store.url is None:
        return None
    from monitor.store.postgres.connection import Timeouts
    from monitor.store.postgres.judge_limits import JudgeLimitCounters

    timeouts = Timeouts(store.connect_timeout, store.statement_timeout, store.lock_timeout)
    counters = JudgeLimitCounters(store.url, timeouts)
    return SharedLimits(counters, on_fallback=on_fallback, retry_after=store.reopen_interval)


def pairwise_of(
    config: MonitorConfig,
    pairwise_judges: Mapping[str, PairwiseJudge],
    engine: JudgeEngine,
    metrics: MetricsExporter,
    store: QueuedResultStore | None,
    apply_tally: Callable[[MetricsTally], None],
    keeper: PendingKeeper | None = None,
    exporter: EvaluationExporter | None = None,
) -> PairwiseStage | None:
    """The stage that pairs the variants' traces for the pairwise judges (its waiting offers kept by `keeper`);
    None without `variants.pairwise`."""
    entries = config.variants.pairwise
    if not entries:
        return None
    return PairwiseStage(
        entries,
        pairwise_judges,
        engine.judge,
        apply_tally,
        tee(store.write if store is not None else None, exporter),
        metrics.pairwise.count,
        max_pending=config.judges.settings().max_pending,
        signer=Signer(config.signatures.compiled_rules()),
        keeper=keeper,
    )


def resumer_of(
    config: MonitorConfig,
    stage: JudgeStage,
    pairwise: PairwiseStage | None,
    metrics: MetricsExporter,
    sessions: JudgingTracker | None,
) -> PendingResumer | None:
    """What submits again, at start, the waiting judgements earlier runs kept (the sessions' with the tracker's
    judge hook); None when nothing is kept."""
    if stage.keeper is None:
        return None
    hook = sessions.judge_sessions if sessions is not None else None
    judged = (hook, {c.label: c.evaluator for c in sessions.evaluation.judges}) if hook and sessions else None
    max_age = config.judges.pending_max_age
    return PendingResumer(stage.keeper, stage, pairwise, max_age, metrics.judges.resumed, judged)


def pairwise_listed(config: MonitorConfig, pairwise_judges: Mapping[str, PairwiseJudge]) -> list[ConfiguredEvaluator]:
    """The pairwise judges as the review lists evaluators (the sampling of each one's first entry)."""
    sampling: dict[str, float] = {}
    for entry in config.variants.pairwise:
        sampling.setdefault(entry.evaluator, entry.sampling)
    return [ConfiguredEvaluator(judge, label, sampling[label]) for label, judge in pairwise_judges.items()]
