"""DegradingWrite: write evaluated traces to the database so that a failure costs as little as it can, and is
counted, never raised.

A batch goes in one transaction. When the database refuses a row (the store's ROW_ERRORS: a value it or its
driver cannot take) the batch is written again in halves, until the rows it refuses are alone: a bad row costs
only itself. Anything else (the database is not open, full, read-only, gone) fails the whole batch at once. What
is lost is counted per result and by reason (`StoreHealth.lost`), every failure is reported to the store's
health (`StoreHealth.failed`), and a batch written in full, or in part, marks `write` as working again.

With `keep` (the intake log is on: a trace's request stays in the log until its rows are written), the evaluated
traces of a batch that failed as a whole are not lost: they come back, packed (`Kept`), for the writer to try
again; before a kept trace is written again the store is asked whether it has it already (a commit that succeeded
while its answer was lost), so that none is stored twice. Every trace whose rows were written, or lost for good (a
row refused, a value packing cannot take), is told to `on_settled` by its id.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import NamedTuple, cast

from monitor.outcomes import TraceOutcome
from monitor.store.health import StoreHealth
from monitor.store.packing import Packed, Written, kept_results, merged, pack_one

log = logging.getLogger(__name__)


class Kept(NamedTuple):
    """An evaluated trace's rows that could not be written, to try again."""

    trace_id: str
    packed: Packed


Item = Written | Kept
StoredIds = Callable[[list[str]], set[str]]  # of these trace ids, those the store has (raises when it cannot say)


class _Failure(NamedTuple):
    error: BaseException
    items: list[tuple[Item, Packed | None]]  # (what failed, its rows: None when they could not be packed)
    retryable: bool  # the database failed as a whole: trying again later may succeed


class DegradingWrite:
    def __init__(
        self,
        store: Callable[[Packed], None],
        health: StoreHealth,
        *,
        failing_only: bool,
        row_errors: tuple[type[Exception], ...],
        lost_reason: Callable[[BaseException], str],
    ) -> None:
        """`store(packed)`: one transaction, raising when it fails; `failing_only`: the store keeps failing
        results only (`results: failing`); `lost_reason(error)`: the `reason` label of results lost to `error`."""
        self._store = store
        self.health = health
        self.failing_only = failing_only
        self.row_errors = row_errors
        self.lost_reason = lost_reason
        self.errors = 0  # writes that lost traces (failed, or dropped before they were tried)
        self.keep = False  # keep the traces of a batch the database failed as a whole (`Kept`), for a retry
        self.on_settled: Callable[[list[str]], None] = lambda trace_ids: None
        self.stored: StoredIds | None = None  # asked before kept traces are written again

    def __call__(self, items: Sequence[Item]) -> list[Kept]:
        """Write the traces, one transaction when they all go in; a failure is reported, never raised. The
        traces kept for another try (`keep` only), not counted lost."""
        now = time.time()
        parts: list[tuple[Item, Packed]] = []
        failures: list[_Failure] = []
        settled: list[str] = []
        items = self._not_stored(items, settled, failures)
        for o in items:
            try:
                parts.append((o, o.packed if isinstance(o, Kept) else pack_one(o, now, self.failing_only)))
            except Exception as exc:  # a value packing cannot take (a bug): that trace only
                failures.append(_Failure(exc, [(o, None)], False))
        written = self._write_parts(parts, failures, settled) if parts else 0
        kept = self._failed(failures, written, settled)
        self.on_settled(settled)
        return kept

    def _failed(self, failures: list[_Failure], written: int, settled: list[str]) -> list[Kept]:
        """Report the failures; what is lost counted (its traces settled), what is kept returned."""
        kept: list[Kept] = []
        for failure in failures:
            lost, lost_traces = 0, 0
            for o, packed in failure.items:
                if self.keep and failure.retryable and packed is not None and isinstance(o, TraceOutcome | Kept):
                    kept.append(o if isinstance(o, Kept) else Kept(o.trace_id, packed))
                    continue
                lost_traces += 1
                lost += packed.kept if packed is not None else kept_results(cast(Written, o), self.failing_only)
                if isinstance(o, TraceOutcome | Kept):
                    settled.append(o.trace_id)
            if lost_traces:
                self.errors += 1
                log.debug("could not write evaluated traces to the result store: %r", failure.error)
                self.health.lost(self.lost_reason(failure.error), lost)
        if not failures:
            self.health.succeeded("write")
            return kept
        for failure in failures[:-1]:
            self.health.failed("write", failure.error, counted_only=True)
        self.health.failed("write", failures[-1].error, counted_only=bool(written))
        if written:  # some rows refused, the others written: counted, and the store works
            self.health.succeeded("write")
        return kept

    def dropped(self, traces: Sequence[Item], reason: str, why: str) -> None:
        """Traces dropped before they were tried (`reason`: the lost results' label), counted, reported and
        settled (lost for good)."""
        if traces:
            self.errors += 1
            lost = sum(o.packed.kept if isinstance(o, Kept) else kept_results(o, self.failing_only) for o in traces)
            self.health.lost(reason, lost)
            self.health.failed("write", f"{len(traces)} evaluated traces dropped: {why}")
            self.on_settled([o.trace_id for o in traces if isinstance(o, TraceOutcome | Kept)])

    def _not_stored(self, items: Sequence[Item], settled: list[str], failures: list[_Failure]) -> list[Item]:
        """`items` without the kept traces the store has already (settled); when it cannot say, every kept trace
        fails again without a write."""
        retried = [o.trace_id for o in items if isinstance(o, Kept)]
        if not retried or self.stored is None:
            return list(items)
        try:
            stored = self.stored(retried)
        except Exception as exc:
            again: list[tuple[Item, Packed | None]] = [(o, o.packed) for o in items if isinstance(o, Kept)]
            failures.append(_Failure(exc, again, True))
            return [o for o in items if not isinstance(o, Kept)]
        settled.extend(t for t in retried if t in stored)
        return [o for o in items if not (isinstance(o, Kept) and o.trace_id in stored)]

    def _write_parts(self, parts: list[tuple[Item, Packed]], failures: list[_Failure], settled: list[str]) -> int:
        """Write `parts` in one transaction; when the database refuses a row, each half again, until the rows it
        refuses are alone. The parts written (their traces settled); the failures appended."""
        try:
            self._store(merged([packed for _, packed in parts]))
        except Exception as exc:
            if len(parts) == 1 or not isinstance(exc, self.row_errors):
                failures.append(_Failure(exc, list(parts), not isinstance(exc, self.row_errors)))
                return 0
            half = len(parts) // 2
            return self._write_parts(parts[:half], failures, settled) + self._write_parts(
                parts[half:], failures, settled
            )
        settled.extend(o.trace_id for o, _ in parts if isinstance(o, TraceOutcome | Kept))
        return len(parts)
