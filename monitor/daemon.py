"""The daemon: wires receivers → ingest → assembler → evaluation pool → metrics/store from the config, in one place.

Every component is a `monitor.lifecycle.Component`: `start()`, then an idempotent `shutdown(grace)` that is safe
before `start()`. The daemon lists them in start order (`Daemon._parts`); its `Lifecycle` starts them in that order
and shuts them down in reverse within `shutdown.grace_period`, and a failed `start()` shuts them all down.
SIGTERM/SIGINT → `shutdown()`: stop accepting, complete every pending trace as it is, drain the evaluation pool
within the grace period, count what could not be evaluated, stop the API server last.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import signal

from evaluators.judges import LLMJudge
from monitor import __version__
from monitor.auth import BearerAuth, RevokedSessions
from monitor.config import MonitorConfig
from monitor.config.address import external_url
from monitor.config.models import usable_cpus
from monitor.consumer import TraceConsumer
from monitor.detection.job import DriftJob, FirstReport, drift_job_of
from monitor.engine.admission import Admission, AdmissionGate
from monitor.engine.assembler import TraceAssembler
from monitor.engine.configured import ConfiguredEvaluator
from monitor.engine.dispatcher import DueTraceDispatcher
from monitor.engine.drain import PendingTraces
from monitor.engine.evaluation_export import ExportPart, evaluation_slots, main_exporter
from monitor.engine.evaluator_setup import thresholds_of
from monitor.engine.gc_tuning import tune_gc
from monitor.engine.ingest import Ingestor
from monitor.engine.judge_setup import judge_stages, pairwise_listed, resumer_of
from monitor.engine.late_evaluations import late_evaluations_of
from monitor.engine.poll_intake import FEED_RECEIVER, DaemonSink
from monitor.engine.pool import EvaluationPool, EvaluationStartError
from monitor.engine.recorder import ResultRecorder
from monitor.explain.attribution import Explanations, explanations_of
from monitor.intake.from_config import intake_of
from monitor.lifecycle import Closing, Grace, Hook, Lifecycle, Part, Together
from monitor.logutil import RateLimitedLogger
from monitor.metrics import MetricsExporter
from monitor.metrics.loop_lag import EventLoopLag
from monitor.metrics.rebuild import window_rebuild_of
from monitor.preflight import Prepared, preflight
from monitor.receivers.grpc_receiver import GrpcReceiver
from monitor.receivers.http_receiver import HttpReceiver
from monitor.receivers.inflight import InflightBytes
from monitor.result_sink import ResultSink, TallyMetrics
from monitor.review.agreement_cache import AgreementCache
from monitor.review.models import PairwiseCounts
from monitor.review.of_store import StoreReviewReader, reader_of
from monitor.review.queue import review_queue
from monitor.review.service import STORE_DISABLED
from monitor.sessions.from_config import tracker_of
from monitor.sources.phoenix.review_annotations import review_annotator
from monitor.sources.pollers import build_pollers
from monitor.sources.scheduler import PollScheduler
from monitor.store.from_config import open_result_store, poll_leases
from monitor.store.health import StoreHealth, StoreUnavailable
from monitor.store.reviews import StoredReview
from monitor.store.schema import StoreSchemaError
from monitor.store.writer import QueuedResultStore
from monitor.web.access import Access
from monitor.web.app import build_api_app
from monitor.web.comparison_info import comparison_infos
from monitor.web.evaluator_info import evaluator_infos
from monitor.web.review_writer import ReviewWriter
from monitor.web.server import WebServer

log = logging.getLogger(__name__)
STARTUP_ERRORS = (OSError, EvaluationStartError, StoreSchemaError)
STORED_WAIT = 10.0  # seconds a poller waits for the store's writer before it moves its checkpoint, at most
STOP_SIGNAL_WAIT = 0.5  # seconds a failed worker start waits for the stop signal that may have caused it


def _metrics_of(config: MonitorConfig, evaluators: list[ConfiguredEvaluator]) -> MetricsExporter:
    """The daemon's metrics: the `metrics:` section's, with the evaluators' alert rules, the variants, and the
    failure signatures counted over the new-signature alert's range."""
    new_signatures = config.alerting.default_alerts.new_failure_signatures
    return MetricsExporter.from_config(
        config.metrics,
        thresholds_of(evaluators, config.external_evaluations.alerts),
        config.variants,
        config.signatures,
        config.store.enabled,
        new_signature_range=new_signatures.range_of(config.signatures.window),
    )


class Daemon:
    def __init__(self, config: MonitorConfig, prepared: Prepared | None = None) -> None:
        """`prepared`: what `preflight(config)` built (built here when not given; ConfigError if it fails)."""
        self.config = config
        assembly = config.assembly
        prepared = prepared if prepared is not None else preflight(config)
        evaluators = prepared.evaluators
        self.evaluator_count = len(evaluators)
        self.metrics = telemetry = _metrics_of(config, evaluators)
        self.assembler = TraceAssembler.from_config(assembly)
        self.ingestor = _ingestor(config, self.assembler)
        self.store_health = StoreHealth(telemetry.store.error, on_lost=telemetry.store.lost)
        self.store, self.review = _result_store(config, self.store_health)
        read = self.review.recent_verdicts if self.review is not None else None
        self.window_rebuild = window_rebuild_of(config, telemetry.results, telemetry.rebuild, read, StoreUnavailable)
        apply = TallyMetrics(telemetry).apply  # every tally of results, whoever produced it, to the metrics
        self.ingestor.late_evaluations = late_evaluations_of(config, evaluators, apply, self.store)
        self.exporter = exporter = main_exporter(config, telemetry)  # results out as OTLP logs (export.evaluations)
        self.recorder = ResultRecorder(telemetry.recording, apply, telemetry.evaluation.dropped)
        pairwise_judges = prepared.pairwise_judges
        judging = judge_stages(config, evaluators, pairwise_judges, telemetry, self.store, apply, exporter)
        self.judge_engine, self.judge_stage, self.pairwise = judging
        keeper, judge = self.judge_stage.keeper, self.judge_engine.judge  # keeper: where waiting judgements are kept
        self.sessions = tracker_of(config, evaluators, telemetry.sessions, apply, judge, self.store, keeper, exporter)
        self.resumer = resumer_of(config, self.judge_stage, self.pairwise, telemetry, self.sessions)
        sink = ResultSink(self.recorder, self.judge_stage, self.pairwise, self.sessions)  # each batch's results
        self.pool = EvaluationPool.from_config(
            config.evaluation,
            evaluation_slots(config, evaluators, self.store, exporter),
            sink.record,
            telemetry.evaluation.dropped,
            count_restart=telemetry.evaluation.restarted,
            on_store_report=self.store_health.apply_report,
            on_new_signatures=telemetry.signatures.new,
            cores=usable_cpus(),
        )
        self.dispatcher = DueTraceDispatcher(self.assembler, self.pool)
        _observe(telemetry, self)
        self.admission = Admission(self.assembler, self.pool, quiet_period=assembly.quiet_period)
        self.polling = self._polling(prepared)
        # One budget for both receivers: the bytes of requests in flight, process-wide.
        self.inflight = InflightBytes(config.receivers.max_inflight_bytes)
        # The intake log: each accepted request on disk before its answer, replayed at start until stored.
        self.intake = intake_of(config, self, telemetry.intake_log)
        admitted = AdmissionGate(self.intake.consumer, self.admission)  # refuses, or schedules the closing spans
        self.grpc, self.http = _receivers(config, prepared, admitted, self.inflight, self.metrics)
        revoked = RevokedSessions.of_store(config.store.path if config.store.enabled else None)
        self.access = Access(config.api_token(), config.api.allow_unauthenticated, revoked=revoked)
        self.agreement = AgreementCache(self.review.reviews_in_force if self.review is not None else list)
        self.annotator = review_annotator(config.sources, _judge_labels(prepared))
        self.reviewing = ReviewWriter(self.store, on_reviewed=self._reviewed)  # reviewers' verdicts
        self.drift, self.explanations = self._analysis()
        self.api = self._api(prepared)
        self.lifecycle = Lifecycle(self._parts())
        self._stopping = asyncio.Event()
        self.stop_requested = False  # SIGTERM or SIGINT received (request_stop)
        self._stopped = False
        self.started = False

    def _analysis(self) -> tuple[DriftJob | None, Explanations]:
        """What reads the store beside the traces: the drift job, the explainer and the attribution job."""
        config, telemetry = self.config, self.metrics
        drift = drift_job_of(config.drift, self.review, telemetry.drift, stored_results=config.store.results)
        breaches = telemetry.results.alert_states
        return drift, explanations_of(config.explain, self.review, breaches, telemetry.attribution)

    def _reviewed(self, review: StoredReview) -> None:
        """A review written here: counted, the agreement figures read again, a judge's posted to Phoenix."""
        self.metrics.reviews.count(review)
        self.agreement.invalidate()
        self.annotator.on_reviewed(review)

    def _polling(self, prepared: Prepared) -> PollScheduler:
        """The poll sources' scheduler: their traces go to the assembler and the pool like received ones (within the
        admission's room); with a shared PostgreSQL store, each source is polled by one replica (`leases`)."""
        config, telemetry = self.config, self.metrics
        feed = telemetry.intake.receiver(FEED_RECEIVER)
        store = self.store
        stored = (lambda: store.flush(STORED_WAIT)) if store is not None else (lambda: None)
        sink = DaemonSink(self.assembler, self.pool, feed, room=self.admission.poll_room, stored=stored)
        judges = _judge_labels(prepared)
        leases = poll_leases(config.store) if any(s.enabled for s in config.sources) else None
        pollers = build_pollers(config, prepared.sources, self.store, sink, telemetry.poll, judges, reader_of, leases)
        return PollScheduler(pollers, leases)

    def _api(self, prepared: Prepared) -> WebServer:
        """The API server: /metrics, the health checks, the review page and its API."""
        config = self.config
        listed = [*prepared.evaluators, *pairwise_listed(config, prepared.pairwise_judges)]  # what the review lists
        app = build_api_app(
            self.metrics.render,
            self.readiness,
            config.api_token(),
            reader=self.review,
            evaluators_info=lambda: evaluator_infos(listed, self.metrics.results, self.agreement.current()),
            unavailable=STORE_DISABLED,
            review=config.review,
            comparisons_info=comparison_infos(self.metrics.results.comparisons.states, self._pairwise_counts),
            access=self.access,
            resolve_after=config.signatures.resolve_after,
            queue=review_queue(
                config.review.queue, prepared.evaluators, self.review, self.metrics.results.alert_states
            ),
            reviewing=self.reviewing,
            changes=(lambda: drift.latest) if (drift := self.drift) is not None else None,
            drift=config.drift,
            explainer=self.explanations.explainer,
            explain_unavailable=self.explanations.unavailable,
        )
        context = prepared.api_tls.ssl_context() if prepared.api_tls is not None else None
        return WebServer(
            app,
            config.metrics.host,
            config.metrics.port,
            name="api",
            ssl_context=context,
            header_timeout=config.metrics.header_timeout,
        )

    def _parts(self) -> list[Part]:
        """Every component in start order (dependencies first: the windows rebuilt from the store before the API
        answers a scrape); shutdown runs the list backwards: stop accepting,
        the receivers and the pollers, the dispatcher, the pending traces evaluated, the judges drained, the
        workers stopped, the open sessions completed and evaluated, the judge engine closed, the evaluation records
        sent (export.evaluations), the store flushed,
        the review closed, the API server (so /metrics and /healthz answer during the drain), then the reviews
        posted to Phoenix meanwhile."""
        receiver_grace = Grace(share=0.25, cap=2.0)
        pending = PendingTraces(self.assembler, self.pool, self.metrics.evaluation.dropped, lambda: self.evaluated)
        return [
            Part("windows", self.window_rebuild),  # before the API: no scrape sees the windows empty, then full
            *([Part("drift_first_report", FirstReport(self.drift))] if self.drift is not None else []),  # the same
            Part("event_loop_lag", EventLoopLag(self.metrics.registry)),
            Part("review_writeback", Closing(self.annotator.close)),  # after the API: reviews posted meanwhile
            Part("api", self.api, Grace.fixed(0.5)),
            *([Part("review", Closing(self.review.close))] if self.review is not None else []),
            *([Part("store", self.store)] if self.store is not None else []),
            *([Part("evaluation_export", ExportPart(self.exporter), Grace(cap=2.0))] if self.exporter else []),
            *([Part("drift", self.drift)] if self.drift is not None else []),  # reads the store: stops before it
            *([Part("attribution", job)] if (job := self.explanations.attribution) is not None else []),  # the same
            *([Part("intake_log", self.intake.log)] if self.intake.log is not None else []),
            Part("judge_engine", Closing(self.judge_engine.aclose)),
            *([Part("sessions", self.sessions, Grace(floor=0.5))] if self.sessions is not None else []),
            Part("pool", self.pool, Grace(floor=1.0)),
            *([Part("judgements_resumed", self.resumer)] if self.resumer is not None else []),  # after the judges
            Part("judges", Together(self.judge_stage, *([self.pairwise] if self.pairwise is not None else []))),
            Part("pending_traces", pending),
            Part("dispatcher", self.dispatcher),
            Part("polling", self.polling, Grace(floor=0.1)),
            *([Part("intake_replay", self.intake.replay)] if self.intake.replay is not None else []),
            *([Part("http", self.http, receiver_grace)] if self.http is not None else []),
            *([Part("grpc", self.grpc, receiver_grace)] if self.grpc is not None else []),
            Part("intake", Hook(self._stop_accepting)),
        ]

    # --- wiring callbacks -----------------------------------------------------------------------
    def _pairwise_counts(self, baseline: str, candidate: str) -> list[PairwiseCounts]:
        """The pairwise judges' outcomes of these two variants so far, for the canary view."""
        totals = self.metrics.pairwise.totals(baseline, candidate)
        return [PairwiseCounts(evaluator=evaluator, **counts) for evaluator, counts in totals]

    def _stop_accepting(self) -> None:
        self.ingestor.accepting = False

    @property
    def evaluated(self) -> int:
        return self.recorder.evaluated

    # --- lifecycle ------------------------------------------------------------------------------
    async def start(self) -> None:
        """Start every component in order, sources last; when one fails, shut all down in reverse and re-raise."""
        try:
            await self.lifecycle.start(undo_grace=self.config.shutdown.grace_period)
        except BaseException:
            self._stopped = True
            self._stopping.set()
            raise
        tune_gc(collect_less_often=False)  # see gc_tuning: the main process decodes untrusted input
        self.started = True
        store = self.config.store
        log.info(
            "agent-monitor %s ready: %d evaluators on %d worker%s, metrics on %s:%d, results in %s",
            __version__,
            self.evaluator_count,
            self.pool.workers,
            "s" if self.pool.workers != 1 else "",
            self.config.metrics.host,
            self.api.bound_port,
            ("PostgreSQL " if store.url else "SQLite ") + store.location if store.enabled else "no store",
        )
        where = f"{'https' if self.api.ssl_context else 'http'}://{self.config.metrics.host}:{self.api.bound_port}"
        log.info("%s", self.access.summary(where))
        review = external_url(self.config, self.api.bound_port)
        log.info("review page: %s/review (api.external_url; the alerts' links start with it)", review)

    def readiness(self) -> dict[str, bool]:
        """The checks behind /readyz."""
        return {
            "receivers_bound": self.started,
            "accepting": self.ingestor.accepting,
            "queue_has_room": self.pool.free_slots > 0,
            "pending_below_limit": self.assembler.has_room_for(1),
        }

    @property
    def ready(self) -> bool:
        return self.started and not self._stopping.is_set() and self.pool.free_slots > 0

    def request_stop(self) -> None:
        self.stop_requested = True
        self._stopping.set()

    async def run_until_stopped(self) -> int:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self.request_stop)
        try:
            await self.start()  # a port that cannot be bound or workers that cannot start: raised after cleanup
        except EvaluationStartError:
            # SIGTERM or SIGINT sent to the process group (Ctrl-C, `kill -- -PGID`) during start-up also stops
            # the workers being started: that is a stop, not a failure. The signal reaches this process at the
            # same time; its handler runs within a loop iteration or two.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop_signalled(), STOP_SIGNAL_WAIT)
            if not self.stop_requested:
                raise
            log.info("stop requested during start-up: exiting")
            return 0
        await self._stopping.wait()
        log.info("stop requested: completing pending traces")
        await self.shutdown()
        return 0

    async def _stop_signalled(self) -> None:
        while not self.stop_requested:
            await asyncio.sleep(0.02)

    async def shutdown(self, grace: float | None = None) -> None:
        """Ordered, idempotent stop within `grace` (default: the configured grace period)."""
        if self._stopped:
            return
        self._stopped = True
        self._stopping.set()
        await self.lifecycle.shutdown(self.config.shutdown.grace_period if grace is None else grace)


def _observe(telemetry: MetricsExporter, daemon: Daemon) -> None:
    """The gauges read from components at scrape time (on the loop, where they change): assembler, pool, pending
    judgements, store health; and the signatures the store counts new (the judges' and in-process evaluation's)."""
    if daemon.store is not None:
        daemon.store.news.on_new = telemetry.signatures.new
    telemetry.assembly.observe(daemon.assembler)
    telemetry.evaluation.observe(daemon.pool)
    telemetry.judges.observe_pending([daemon.judge_stage, *([daemon.pairwise] if daemon.pairwise else [])])
    telemetry.store.observe(daemon.store_health if daemon.store is not None else None)


def _ingestor(config: MonitorConfig, assembler: TraceAssembler) -> Ingestor:
    """Decoding and limits in front of the assembler; a throttled export retries after the quiet period."""
    retry = max(1, math.ceil(config.assembly.quiet_period))
    problems = RateLimitedLogger(logging.getLogger(Ingestor.__module__), config.logging.per_span_problem_rate)
    return Ingestor(assembler, retry_after_seconds=retry, problem_log=problems)


def _judge_labels(prepared: Prepared) -> set[str]:
    """The metric labels of the configured LLM judges."""
    return {e.label for e in prepared.evaluators if isinstance(e.evaluator, LLMJudge)}


def _result_store(
    config: MonitorConfig, health: StoreHealth
) -> tuple[QueuedResultStore | None, StoreReviewReader | None]:
    """The write side and the review's read side (connections of its own); None, None when disabled. A store
    that cannot be opened starts unavailable (and is retried): the daemon runs on."""
    if not config.store.enabled:
        return None, None
    store = open_result_store(config.store, health=health, signatures=config.signatures)
    if config.intake.wal.enabled and config.evaluation.worker_count() <= 1:  # it writes the evaluated traces
        store.hold_unwritten()
    return store, reader_of(store)


def _receivers(
    config: MonitorConfig,
    prepared: Prepared,
    consumer: TraceConsumer,
    inflight: InflightBytes,
    metrics: MetricsExporter,
) -> tuple[GrpcReceiver | None, HttpReceiver | None]:
    """The enabled OTLP receivers (gRPC, HTTP): one in-flight byte budget, one token check, each its own counts."""
    receivers, tls = config.receivers, prepared.receivers_tls
    auth = BearerAuth(receivers.auth.token())
    grpc = http = None
    if receivers.grpc.enabled:
        pem = (tls.key, tls.cert) if tls is not None else None
        telemetry = metrics.intake.receiver("grpc")
        grpc = GrpcReceiver(receivers, consumer, auth=auth, telemetry=telemetry, inflight=inflight, tls=pem)
    if receivers.http.enabled:
        context = tls.ssl_context() if tls is not None else None
        telemetry = metrics.intake.receiver("http")
        http = HttpReceiver(receivers, consumer, auth=auth, telemetry=telemetry, inflight=inflight, ssl_context=context)
    return grpc, http
