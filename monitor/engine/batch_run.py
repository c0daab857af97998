"""BatchRun: evaluate a batch of completed traces, store its result rows, and tally its metrics.

It runs where the evaluation runs: in a worker process, with the worker's own connection to the result store
(SQLite in WAL mode takes writers from several processes), or on the in-process evaluation thread, with the
daemon's store. Only the metrics tally (metrics/tally.py) goes back to the process that owns the registry,
so that process does no per-result work: it applies one tally per batch.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence

from monitor.engine.assembler import CompletedTrace
from monitor.engine.trace_evaluation import TraceEvaluator
from monitor.metrics.tally import MetricsTally
from monitor.results.rows import TraceFailure, TraceOutcome

StoreWrite = Callable[[Sequence[TraceOutcome]], None]


def tally_of(outcomes: Iterable[TraceOutcome | TraceFailure]) -> MetricsTally:
    """The metrics tally of evaluated traces (failures counted as such)."""
    tally = MetricsTally()
    for o in outcomes:
        if isinstance(o, TraceFailure):
            tally.add_failure(o.trace_id, o.error)
            continue
        tally.add_trace(
            o.service, o.duration_seconds, o.has_error, o.trace_id, o.tokens, o.tools, o.llm_calls, o.last_seen
        )
        tally.add_results(o.service, o.trace_id, o.results)
        if o.judge_jobs:
            tally.judge_jobs.extend(o.judge_jobs)
    return tally


class BatchRun:
    """Callable on a batch: (the tally's wire form, the seconds the batch took, store included)."""

    def __init__(self, evaluator: TraceEvaluator, write: StoreWrite | None = None) -> None:
        self.evaluator = evaluator
        self.write = write

    def __call__(self, batch: Iterable[CompletedTrace]) -> tuple[tuple, float]:
        started = time.perf_counter()
        outcomes = self.evaluator.evaluate_batch(batch)
        if self.write is not None:
            evaluated = [o for o in outcomes if isinstance(o, TraceOutcome)]
            if evaluated:
                self.write(evaluated)
        tally = tally_of(outcomes)
        return tally.wire(), time.perf_counter() - started
