"""EvaluationWorker: completed traces → views → evaluators → metrics and result store.

Traces wait in a bounded asyncio queue; the CPU work runs on one worker thread so the event
loop (and with it every receiver) stays responsive. An evaluator that runs past its timeout has
its result replaced by a `timeout` skip.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from evaluators.sdk import EvaluationRecord, run_evaluators
from evaluators.traces import build_trace, join_logs
from evaluators.traces.model import Trace
from monitor.engine.assembler import CompletedTrace
from monitor.metrics import MetricsExporter
from monitor.results.store import ResultStore, StoredTrace

log = logging.getLogger(__name__)
BATCH_SIZE = 32


@dataclass(slots=True)
class ConfiguredEvaluator:
    """An evaluator instance with its daemon-side settings."""

    evaluator: Any
    label: str  # the `evaluator` metric label
    sampling: float = 1.0
    entry: Any = None  # the config entry it came from (None for the default set)


def sampled_in(trace_id: str, evaluator_label: str, rate: float) -> bool:
    """Deterministic by trace id, so every replica makes the same choice for a trace."""
    if rate >= 1.0:
        return True
    digest = hashlib.blake2b(f"{evaluator_label}:{trace_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64 < rate


class EvaluationWorker:
    def __init__(
        self,
        evaluators: Sequence[ConfiguredEvaluator],
        metrics: MetricsExporter,
        store: ResultStore | None = None,
        *,
        queue_size: int = 1000,
        timeout_seconds: float = 30.0,
        mode: str = "monitor",
    ) -> None:
        self.evaluators = list(evaluators)
        self.metrics = metrics
        self.store = store
        self.timeout_seconds = timeout_seconds
        self.mode = mode
        self.queue: asyncio.Queue[CompletedTrace] = asyncio.Queue(maxsize=queue_size)
        self.queue_size = queue_size
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="evaluation")
        self._task: asyncio.Task | None = None
        self.evaluated = 0
        self.last_delay_seconds = 0.0

    @property
    def free_slots(self) -> int:
        return self.queue_size - self.queue.qsize()

    @property
    def depth(self) -> int:
        return self.queue.qsize()

    def submit(self, completed: CompletedTrace) -> bool:
        try:
            self.queue.put_nowait(completed)
        except asyncio.QueueFull:
            return False
        self.metrics.queue_depth.set(self.queue.qsize())
        return True

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="evaluation-worker")

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            batch = [await self.queue.get()]
            while len(batch) < BATCH_SIZE and not self.queue.empty():
                batch.append(self.queue.get_nowait())
            try:
                await loop.run_in_executor(self._executor, self._evaluate_batch, batch)
            finally:
                for _ in batch:
                    self.queue.task_done()
                self.metrics.queue_depth.set(self.queue.qsize())

    def _evaluate_batch(self, batch: list[CompletedTrace]) -> None:
        """Several traces per hand-off to the worker thread: one GIL round trip instead of one per trace."""
        for completed in batch:
            try:
                self.evaluate(completed)
            except Exception:
                log.exception("evaluation of trace %s failed", completed.trace_id)
                self.metrics.traces_dropped.labels(reason="evaluation_error").inc()
        if self.store is not None:
            try:
                self.store.flush()
            except Exception:
                log.exception("could not write results to the store")

    def evaluate(self, completed: CompletedTrace) -> None:
        """Build the views, run every evaluator, record metrics and results (worker thread)."""
        join_logs(completed.spans, completed.logs)
        trace = build_trace(completed.spans, completed.trace_id)
        records = self.run(trace)
        self._observe(trace, records)
        self.evaluated += 1
        self.metrics.traces_evaluated.inc()
        self.last_delay_seconds = time.monotonic() - completed.last_seen
        self.metrics.completion_delay.observe(self.last_delay_seconds)

    def run(self, trace: Trace) -> list[Any]:
        records: list[Any] = []
        for configured in self.evaluators:
            if not sampled_in(trace.trace_id, configured.label, configured.sampling):
                records.extend(self._sampled_out(trace, configured))
                continue
            started = time.perf_counter()
            produced = run_evaluators(trace, [configured.evaluator], mode=self.mode)
            elapsed = time.perf_counter() - started
            for record in produced:
                record = relabel(record, configured.label)
                if elapsed > self.timeout_seconds and not record.skipped:
                    record = _as_skip(
                        record, "timeout", f"ran {elapsed:.1f}s, over the {self.timeout_seconds:g}s limit"
                    )
                records.append(record)
        return records

    def _sampled_out(self, trace: Trace, configured: ConfiguredEvaluator) -> list[Any]:
        return [
            EvaluationRecord(
                trace_id=trace.trace_id,
                service=trace.service_name,
                evaluator=configured.label,
                level=getattr(configured.evaluator, "level", "trace"),
                skipped=True,
                skip_reason="sampled_out",
                explanation=f"sampled out at rate {configured.sampling:g}",
            )
        ]

    def _observe(self, trace: Trace, records: list[Any]) -> None:
        metrics = trace.metrics
        service = trace.service_name or "unknown"
        metrics_exporter = self.metrics
        llm_calls = trace.get_llm_calls()
        metrics_exporter.observe_trace(
            service=service,
            duration_seconds=metrics.total_duration_ms / 1000.0,
            has_error=metrics.has_errors,
            tokens=[(c.model, c.metrics.input_tokens, c.metrics.output_tokens) for c in llm_calls],
            tools=[(t.name, not t.has_error) for t in trace.get_tool_calls()],
            trace_id=trace.trace_id,
            llm_calls=[(c.model, not c.has_error) for c in llm_calls],
        )
        for record in records:
            metrics_exporter.observe_result(
                evaluator=record.evaluator,
                level=str(record.level),
                service=service,
                agent=record.agent_name,
                score=record.score,
                passed=record.passed,
                skipped=record.skipped,
                skip_reason=str(record.skip_reason) if record.skip_reason else None,
                trace_id=trace.trace_id,
                duration_seconds=(record.duration_ms or 0.0) / 1000.0,
            )
        if self.store is not None:
            stored = StoredTrace(
                trace_id=trace.trace_id,
                service=service,
                input=trace.input,
                output=trace.output,
                span_count=trace.span_count,
                duration_ms=metrics.total_duration_ms,
                has_errors=metrics.has_errors,
            )
            try:
                self.store.write(stored, records)
            except Exception:
                log.exception("could not store the results of trace %s", trace.trace_id)

    async def drain(self, timeout: float) -> int:
        """Wait for the queue to empty, up to `timeout`; returns how many traces were left unevaluated."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.queue.join(), timeout=max(timeout, 0.0))
        left = 0
        while not self.queue.empty():
            self.queue.get_nowait()
            self.queue.task_done()
            left += 1
        return left

    async def shutdown(self) -> None:
        """Stop the worker task and its thread. Idempotent."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._executor.shutdown(wait=True, cancel_futures=True)


def relabel(record: EvaluationRecord, label: str) -> EvaluationRecord:
    """The record under the configured `evaluator` label (an entry's `id` may differ from the name)."""
    return record if record.evaluator == label else record.model_copy(update={"evaluator": label})


def _as_skip(record: EvaluationRecord, reason: str, message: str) -> EvaluationRecord:
    changes = {"skipped": True, "skip_reason": reason, "score": None, "passed": None, "explanation": message}
    return record.model_copy(update=changes)
