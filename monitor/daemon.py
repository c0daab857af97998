"""The daemon: wires receivers → assembler → evaluation → metrics/store from the config, in one place.

Lifecycle: `start()` binds everything; SIGTERM/SIGINT → `shutdown()`: stop accepting, complete
every pending trace as it is, drain the evaluation queue within the grace period, count what
could not be evaluated, stop the API server last.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import signal
import time

from monitor import __version__
from monitor.config import MonitorConfig
from monitor.engine.assembler import TraceAssembler
from monitor.engine.evaluation import EvaluationWorker
from monitor.engine.evaluator_setup import thresholds_of
from monitor.engine.ingest import Ingestor
from monitor.logutil import RateLimitedLogger
from monitor.metrics import MetricsExporter
from monitor.preflight import Prepared, preflight
from monitor.receivers.grpc_receiver import GrpcReceiver
from monitor.receivers.http_receiver import HttpReceiver
from monitor.receivers.inflight import InflightBytes
from monitor.results.store import ResultStore
from monitor.web.app import build_api_app
from monitor.web.server import WebServer

log = logging.getLogger(__name__)
TICK_SECONDS = 0.1


class Daemon:
    def __init__(self, config: MonitorConfig, prepared: Prepared | None = None) -> None:
        """`prepared`: what `preflight(config)` built (built here when not given; ConfigError if it fails)."""
        self.config = config
        assembly = config.assembly
        prepared = prepared if prepared is not None else preflight(config)
        evaluators = prepared.evaluators
        self.metrics = MetricsExporter(
            windows=[(w.label, w.seconds) for w in config.metrics.windows],
            window_sample_cap=config.metrics.window_sample_cap,
            label_value_cap=config.metrics.label_value_cap,
            score_buckets=config.metrics.score_buckets,
            duration_buckets=config.metrics.duration_buckets,
            thresholds=thresholds_of(evaluators),
        )
        self.assembler = TraceAssembler(
            quiet_period=assembly.quiet_period,
            max_trace_wait=assembly.max_trace_wait,
            max_pending_spans=assembly.max_pending_spans,
            max_spans_per_trace=assembly.max_spans_per_trace,
            evaluated_trace_memory=assembly.evaluated_trace_memory,
            late_span_window=assembly.late_span_window,
        )
        auth = config.receivers.auth
        self.ingestor = Ingestor(
            self.assembler,
            self.metrics,
            bearer_token=auth.token(),
            retry_after_seconds=max(1, math.ceil(assembly.quiet_period)),
            problem_log=RateLimitedLogger(logging.getLogger(Ingestor.__module__), config.logging.per_span_problem_rate),
            evaluation_backlogged=self._evaluation_backlogged,
        )
        self.store = ResultStore(config.store.path, config.store.retention) if config.store.enabled else None
        self.worker = EvaluationWorker(
            evaluators,
            self.metrics,
            self.store,
            queue_size=config.evaluation.queue_size,
            timeout_seconds=config.evaluation.timeout,
            mode=config.evaluation.mode,
        )
        tls = prepared.receivers_tls
        # One budget for both receivers: the bytes of requests in flight, process-wide.
        self.inflight = InflightBytes(config.receivers.max_inflight_bytes)
        self.grpc: GrpcReceiver | None = None
        self.http: HttpReceiver | None = None
        if config.receivers.grpc.enabled:
            key_cert = (tls.key, tls.cert) if tls is not None else None
            self.grpc = GrpcReceiver(
                self.ingestor,
                config.receivers.grpc.host,
                config.receivers.grpc.port,
                max_message_bytes=config.receivers.grpc.max_message_bytes,
                tls=key_cert,
                inflight=self.inflight,
            )
        if config.receivers.http.enabled:
            self.http = HttpReceiver(
                self.ingestor,
                config.receivers.http.host,
                config.receivers.http.port,
                max_body_bytes=config.receivers.http.max_body_bytes,
                ssl_context=tls.ssl_context() if tls is not None else None,
                inflight=self.inflight,
            )
        api_context = prepared.api_tls.ssl_context() if prepared.api_tls is not None else None
        self.api = WebServer(
            build_api_app(self.metrics.render, self.readiness, self.store, config.api_token()),
            config.metrics.host,
            config.metrics.port,
            name="api",
            ssl_context=api_context,
        )
        self._tick_task: asyncio.Task | None = None
        self._stopping = asyncio.Event()
        self._stopped = False
        self.started = False

    # --- lifecycle ----------------------------------------------------------------------------
    async def start(self) -> None:
        self.metrics.build_info.labels(version=__version__).set(1)
        await self.api.start()
        await self.worker.start()
        if self.grpc is not None:
            await self.grpc.start()
        if self.http is not None:
            await self.http.start()
        self._tick_task = asyncio.create_task(self._tick(), name="assembler-tick")
        self.started = True
        log.info(
            "agent-monitor %s ready: %d evaluators, metrics on %s:%d",
            __version__,
            len(self.worker.evaluators),
            self.config.metrics.host,
            self.api.bound_port,
        )

    def _evaluation_backlogged(self) -> bool:
        """Evaluation is behind: the queue plus the traces about to join it fill a queue's worth,
        or due traces are waiting. Throttling then keeps memory flat and the delay bounded."""
        worker, assembler = self.worker, self.assembler
        return worker.depth + assembler.ended_pending >= worker.queue_size or assembler.overdue()

    def readiness(self) -> dict[str, bool]:
        """The checks behind /readyz."""
        return {
            "receivers_bound": self.started,
            "accepting": self.ingestor.accepting,
            "queue_has_room": self.worker.free_slots > 0,
            "pending_below_limit": self.assembler.has_room_for(1),
        }

    @property
    def ready(self) -> bool:
        return self.started and not self._stopping.is_set() and self.worker.free_slots > 0

    def request_stop(self) -> None:
        self._stopping.set()

    async def run_until_stopped(self) -> int:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self.request_stop)
        try:
            await self.start()
        except OSError:  # a port that cannot be bound: stop what did start, then report it
            await self.shutdown()
            raise
        await self._stopping.wait()
        log.info("stop requested: completing pending traces")
        await self.shutdown()
        return 0

    async def _tick(self) -> None:
        while not self._stopping.is_set():
            try:
                self.dispatch_due()
            except Exception:
                log.exception("assembler tick failed")
            await asyncio.sleep(TICK_SECONDS)

    def dispatch_due(self) -> int:
        """Move completed traces into the evaluation queue while it has room (backpressure beyond)."""
        free = self.worker.free_slots
        if free <= 0:
            return 0
        due = self.assembler.pop_due(limit=free)
        for completed in due:
            self.worker.submit(completed)
        self.ingestor.update_gauges()
        return len(due)

    async def shutdown(self) -> None:
        """Ordered, idempotent stop within the configured grace period."""
        if self._stopped:
            return
        self._stopped = True
        self._stopping.set()
        deadline = time.monotonic() + self.config.shutdown.grace_period
        self.ingestor.accepting = False
        for receiver in (self.grpc, self.http):
            if receiver is not None:
                await receiver.shutdown(grace=min(2.0, self.config.shutdown.grace_period / 4))
        if self._tick_task is not None:
            self._tick_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._tick_task
        pending = self.assembler.flush_all()
        not_queued = 0
        for index, completed in enumerate(pending):
            if self.worker.submit(completed):
                continue
            try:
                await asyncio.wait_for(self.worker.queue.put(completed), timeout=max(deadline - time.monotonic(), 0))
            except TimeoutError:
                not_queued = len(pending) - index
                break
        dropped = not_queued + await self.worker.drain(deadline - time.monotonic())
        if dropped:
            self.metrics.traces_dropped.labels(reason="shutdown_timeout").inc(dropped)
            log.warning("shutdown: %d traces could not be evaluated within the grace period", dropped)
        log.info(
            "shutdown: evaluated %d traces in total (%d completed at shutdown)", self.worker.evaluated, len(pending)
        )
        self.ingestor.update_gauges()
        await self.worker.shutdown()
        if self.store is not None:
            self.store.close()
        await self.api.shutdown(grace=0.5)
