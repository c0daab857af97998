"""Explanations' reads on the daemon's store (a mixin of `sqlite_reader.StoreReviewReader`, so both databases
answer alike): the traces of a range with their dimensions and verdicts, the texts naming a few of them, and a
signature's traces (store/dimension_reads.py), the range's reads bounded in time as drift's reads are
(drift_reads.bounded_read). A failure is counted in the store's health and raised as StoreUnavailable, like every
read."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from monitor.review.drift_reads import bounded_read
from monitor.store import dimension_reads
from monitor.store.dimension_reads import DimensionRead


class ExplainStoreReads:
    """`explain_rows`, `explain_texts` and `signature_trace_ids` over `_run(read)`."""

    _run: Callable[..., Any]

    def explain_rows(
        self, since: float, until: float, params: dict[str, Any], limit: int, timeout: float | None = None
    ) -> DimensionRead:
        """The traces stored at `since` <= time < `until` that `params` choose (dimension_reads.dimension_rows),
        the newest `limit`."""
        result: DimensionRead = self._run(
            lambda db: bounded_read(
                db, timeout, lambda: dimension_reads.dimension_rows(db, since, until, params, limit)
            )
        )
        return result

    def explain_texts(self, trace_ids: Sequence[str]) -> dict[str, str | None]:
        """The packed dimension texts of `trace_ids` (those stored)."""
        result: dict[str, str | None] = self._run(lambda db: dimension_reads.dimension_texts(db, trace_ids))
        return result

    def signature_trace_ids(
        self, signature: str, since: float, until: float, limit: int, timeout: float | None = None
    ) -> set[str]:
        """The traces with a failing result of `signature` in the range (at most `limit`)."""
        result: set[str] = self._run(
            lambda db: bounded_read(
                db, timeout, lambda: dimension_reads.signature_trace_ids(db, signature, since, until, limit)
            )
        )
        return result
