"""DegradingWrite: write evaluated traces to the database so that a failure costs as little as it can, and is
counted, never raised.

A batch goes in one transaction. When the database refuses a row (the store's ROW_ERRORS: a value it or its
driver cannot take) the batch is written again in halves, until the rows it refuses are alone: a bad row costs
only itself. Anything else (the database is not open, full, read-only, gone) fails the whole batch at once. What
is lost is counted per result and by reason (`StoreHealth.lost`), every failure is reported to the store's
health (`StoreHealth.failed`), and a batch written in full, or in part, marks `write` as working again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

from monitor.store.health import StoreHealth
from monitor.store.packing import Packed, Written, kept_results, merged, pack_one

log = logging.getLogger(__name__)


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

    def __call__(self, traces: Sequence[Written]) -> None:
        """Write the traces, one transaction when they all go in; a failure is reported, never raised."""
        now = time.time()
        parts: list[Packed] = []
        failures: list[tuple[BaseException, int]] = []
        for o in traces:
            try:
                parts.append(pack_one(o, now, self.failing_only))
            except Exception as exc:  # a value packing cannot take (a bug): that trace only
                failures.append((exc, kept_results(o, self.failing_only)))
        written = self._write_parts(parts, failures) if parts else 0
        for error, lost in failures:
            self.errors += 1
            log.debug("could not write evaluated traces to the result store: %r", error)
            self.health.lost(self.lost_reason(error), lost)
        if not failures:
            self.health.succeeded("write")
            return
        for error, _ in failures[:-1]:
            self.health.failed("write", error, counted_only=True)
        self.health.failed("write", failures[-1][0], counted_only=bool(written))
        if written:  # some rows refused, the others written: counted, and the store works
            self.health.succeeded("write")

    def dropped(self, traces: Sequence[Written], reason: str, why: str) -> None:
        """Traces dropped before they were tried (`reason`: the lost results' label), counted and reported."""
        if traces:
            self.errors += 1
            self.health.lost(reason, sum(kept_results(o, self.failing_only) for o in traces))
            self.health.failed("write", f"{len(traces)} evaluated traces dropped: {why}")

    def _write_parts(self, parts: list[Packed], failures: list[tuple[BaseException, int]]) -> int:
        """Write `parts` in one transaction; when the database refuses a row, each half again, until the rows it
        refuses are alone. The parts written; the failures appended."""
        try:
            self._store(merged(parts))
        except Exception as exc:
            if len(parts) == 1 or not isinstance(exc, self.row_errors):
                failures.append((exc, sum(p.kept for p in parts)))
                return 0
            half = len(parts) // 2
            return self._write_parts(parts[:half], failures) + self._write_parts(parts[half:], failures)
        return len(parts)
