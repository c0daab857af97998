"""LoggedConsumer: the receivers' TraceConsumer with the intake log in front of the ingestor. A request the log
cannot take (full, failing to write, or the store so far behind that the evaluated traces waiting for their rows
reach their bound: `store_behind`) is answered throttled before it is decoded; an accepted one is appended to
the log with the traces it holds before the answer: written on the caller's thread (`sync: batch`, `none`), or,
with `sync: always`, the answer waits for the writer thread's fsync (`IngestOutcome.durable`, `settled`)."""

from __future__ import annotations

import time
from collections.abc import Callable

from monitor.consumer import IngestOutcome, Outcome, unwritten
from monitor.engine.assembler import TraceAssembler
from monitor.engine.ingest import Ingestor, count_spans
from monitor.intake.log import IntakeLog
from monitor.intake.records import Record

FULL_RETRY_SECONDS = 5.0
FAILING_RETRY_SECONDS = 1.0


class LoggedConsumer:
    def __init__(
        self,
        inner: Ingestor,
        log: IntakeLog,
        assembler: TraceAssembler,
        store_behind: Callable[[], bool] = lambda: False,
    ) -> None:
        self.inner = inner
        inner.record_trace_ids = True  # each record is held by the traces it has spans of
        self.log = log
        self.assembler = assembler
        self.store_behind = store_behind

    def ingest(self, payload: bytes, *, receiver: str, encoding: str, signal: str = "traces") -> IngestOutcome:
        if not self.log.running:
            return self.inner.ingest(payload, receiver=receiver, encoding=encoding, signal=signal)
        refusal = self.log.refusal(len(payload)) or ("behind" if self.store_behind() else None)
        if refusal is not None and self.inner.accepting:
            return self._refused(refusal, payload, encoding, signal)
        outcome = self.inner.ingest(payload, receiver=receiver, encoding=encoding, signal=signal)
        if outcome.outcome is not Outcome.ACCEPTED or not outcome.trace_ids:
            return outcome
        # Only traces that will be evaluated hold the record: spans of a trace already done were dropped as late.
        log, assembling = self.log, self.assembler.assembling
        held = [t for t in outcome.trace_ids if assembling(t) or log.holds(t)]
        if held:
            written = log.append(Record(payload, encoding, signal, receiver, time.time()), held)
            if written is False:
                return unwritten(outcome)
            if written is not True:
                outcome.durable = written
        return outcome

    def _refused(self, refusal: str, payload: bytes, encoding: str, signal: str) -> IngestOutcome:
        if refusal == "full":
            self.log.metrics.full.inc()
            message, retry = "the intake log is full (intake.wal.max_bytes); retry later", FULL_RETRY_SECONDS
        elif refusal == "behind":
            message, retry = "the result store is behind (rows wait to be written); retry later", FULL_RETRY_SECONDS
        else:
            message, retry = "the intake log cannot be written; retry later", FAILING_RETRY_SECONDS
        return IngestOutcome(
            Outcome.THROTTLED,
            message=message,
            retry_after_seconds=retry,
            refused=[("throttled", count_spans(payload, encoding, signal))],
        )
