"""BatchRun: evaluate a batch of completed traces, store its result rows, and tally its metrics.

It runs where the evaluation runs: in a worker process, with the worker's own connection to the result store
(SQLite in WAL mode takes writers from several processes) and its own writer thread (worker_process.py: a batch
waits a little for its rows, never for a database that hangs), or on the in-process evaluation thread, with the
daemon's store (queued for its writer thread). Only the batch's `BatchResult` goes back to the process that owns the
registry, so that process does no per-result work: it applies one metrics tally (metrics/tally.py) per batch, and
hands the worker store's health report, side by side with it, to the daemon's StoreHealth, and the failure
signatures that store counted new (store/signatures.py) to the signature metrics.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

from evaluators.traces.conventions import NORMALIZER_ERRORS
from evaluators.traces.otlp_depth import MAX_VALUE_DEPTH
from evaluators.traces.raw_spans import DEEP_ATTRIBUTES
from monitor.engine.assembler import CompletedTrace
from monitor.engine.pairing import PairOffer
from monitor.engine.trace_evaluation import TraceEvaluator
from monitor.export.counts import EXPORTS
from monitor.export.exporter import EvaluationExporter
from monitor.logutil import RateLimitedLogger
from monitor.metrics.tally import MetricsTally
from monitor.outcomes import TraceFailure, TraceOutcome
from monitor.store.health import StoreReport
from monitor.store.signatures import NewCounts

StoreWrite = Callable[[Sequence[TraceOutcome]], None]
# (of these trace ids, those whose rows still wait to be written; every trace id settled since the last call)
Settlement = Callable[[Sequence[str]], tuple[list[str], list[str]]]
log = logging.getLogger(__name__)


class BatchResult(NamedTuple):
    """What an evaluated batch sends back (builtins and tuples: it pickles small)."""

    tally: tuple  # the metrics tally's wire form (`MetricsTally.from_wire`)
    store: StoreReport | None  # the worker store's health report since its last batch; None: not stored there
    seconds: float  # what the batch took, store included
    new_signatures: NewCounts | None = None  # (evaluator, service) → signatures the worker's store counted new
    # With the intake log on (the store's `settlement`): the batch's traces whose rows still wait to be written,
    # and every trace whose rows were written (or lost for good) since the last result. None: nothing waits.
    unwritten: tuple[str, ...] | None = None
    settled: tuple[str, ...] = ()


def trace_tally(outcomes: Iterable[TraceOutcome | TraceFailure]) -> MetricsTally:
    """The metrics tally of evaluated traces (failures counted as such)."""
    tally = MetricsTally()
    for o in outcomes:
        if isinstance(o, TraceFailure):
            tally.add_failure(o.trace_id, o.error)
            continue
        tally.add_trace(o.service, o.duration_seconds, o.has_error, o.trace_id, o.calls, o.tools, o.last_seen)
        tally.add_results(o.service, o.trace_id, o.results, o.variant)
        if o.judge_jobs:
            tally.judge_jobs.extend(o.judge_jobs)
        if o.pair_keys:
            tally.pair_offers.append(PairOffer(o.trace_id, o.service, o.variant, o.pair_keys, o.input, o.output))
        if o.turn is not None:
            tally.turns.append(o.turn)
    return tally


class BatchRun:
    """Callable on a batch: its `BatchResult`.

    A store that fails never fails the batch: the store reports it to its health (and drops the rows), and in a
    worker process `store_report` (the worker store's `StoreHealth.take_report`) goes back in the result, beside
    the tally, for the daemon's store health (its metrics and logs)."""

    def __init__(
        self,
        evaluator: TraceEvaluator,
        write: StoreWrite | None = None,
        store_report: Callable[[], StoreReport] | None = None,
        new_signatures: Callable[[], NewCounts] | None = None,
        settlement: Settlement | None = None,
        exporter: EvaluationExporter | None = None,
    ) -> None:
        """`new_signatures`: the worker store's `SignatureNews.take` (the signatures it counted new since);
        `settlement`: the store's (`QueuedResultStore.settlement`), with the intake log on; `exporter`: this
        process's evaluation exporter (`export.evaluations`), offered the results after the store write."""
        self.evaluator = evaluator
        self.write = write
        self.store_report = store_report
        self.new_signatures = new_signatures
        self.settlement = settlement
        self.exporter = exporter
        self._problems = RateLimitedLogger(log, per_minute=1)  # per key: store failures, too-deep attributes

    def __call__(self, batch: Iterable[CompletedTrace]) -> BatchResult:
        started = time.perf_counter()
        outcomes = self.evaluator.evaluate_batch(batch)
        evaluated = [o for o in outcomes if isinstance(o, TraceOutcome)]
        if self.write is not None and evaluated:
            try:
                self.write(evaluated)
            except Exception as exc:  # the store reports its own failures: this would be a bug, not a full disk
                self._problems.warning("store", "storing %d evaluated traces failed: %r", len(evaluated), exc)
        if self.exporter is not None and evaluated:
            self.exporter.offer_outcomes(evaluated)  # never blocks: a full queue drops (and counts)
        tally = trace_tally(outcomes)
        tally.normalizer_errors = NORMALIZER_ERRORS.take()  # this process's, since its last batch
        tally.exports = EXPORTS.take()  # the records this process's exporter settled since
        tally.attributes_dropped = DEEP_ATTRIBUTES.take()  # left out of raw spans decoded here
        if tally.attributes_dropped:
            self._problems.warning(
                "too_deep",
                "%s attributes nested deeper than %d levels left out",
                tally.attributes_dropped,
                MAX_VALUE_DEPTH,
            )
        return self._result(tally.wire(), time.perf_counter() - started, [o.trace_id for o in evaluated])

    def report(self) -> BatchResult:
        """The store's side alone (no batch): its health report, the signatures it counted new, the traces it
        settled since the last result (asked for while evaluated traces wait for their rows)."""
        return self._result((), 0.0, [])

    def _result(self, tally: tuple, seconds: float, evaluated: list[str]) -> BatchResult:
        report = self.store_report() if self.store_report is not None else None
        new = self.new_signatures() if self.new_signatures is not None else None
        if self.settlement is None or self.write is None:
            return BatchResult(tally, report, seconds, new or None)
        unwritten, settled = self.settlement(evaluated)
        return BatchResult(tally, report, seconds, new or None, tuple(unwritten), tuple(settled))
