"""The review queue's reads of the store's review reader (a mixin of `sqlite_reader.StoreReviewReader`, so both
databases answer alike): the next unreviewed result of the queue's rules, each rule's backlog, and the reviews
written since a time. A database from before schema version 7 has no reviews: no result is offered, nothing
counted."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any

from monitor.review.queue_sql import (
    Candidate,
    RuleSpec,
    candidate,
    packed_query,
    reviewed_query,
    reviews_since_query,
    rows_query,
)
from monitor.review.sql import Columns
from monitor.store.reviews import ResultKey
from monitor.store.statements import execute, scalar

MAX_SKIPPED = 200  # skipped results a pick looks past (each rule reads one more than those)


class QueueReads:
    """`queue_pick`, `queue_backlog`, `queue_reviewed` and `reviews_since` over `_run(read)` and `_columns_of(db)`."""

    _run: Callable[..., Any]
    _columns_of: Callable[[Any], Columns]

    def queue_pick(
        self, specs: Sequence[RuleSpec], since: float, skipped: Collection[ResultKey] = ()
    ) -> tuple[RuleSpec, Candidate] | None:
        """(spec, result): the newest unreviewed result of the first spec in `specs` that has one not in
        `skipped`; None when every spec is done."""
        skipped = set(list(skipped)[:MAX_SKIPPED]) if len(skipped) > MAX_SKIPPED else set(skipped)
        limit = len(skipped) + 1

        def read(db: Any) -> tuple[RuleSpec, Candidate] | None:
            cols = self._columns_of(db)
            if not cols.reviews:
                return None
            for spec in specs:
                if spec.empty:
                    continue
                found: list[Candidate] = []
                for query in (rows_query(spec, since, limit, cols), packed_query(spec, since, limit, cols)):
                    if query is not None:
                        found += [candidate(row) for row in execute(db, query.rows, query.params).fetchall()]
                found.sort(key=lambda c: c.evaluated_at, reverse=True)  # stable: each query's order kept
                for hit in found:
                    if ResultKey(hit.trace_id, hit.evaluator, hit.level, hit.span_id) not in skipped:
                        return spec, hit
            return None

        return self._run(read)

    def queue_backlog(self, specs: Sequence[RuleSpec], since: float, cap: int) -> list[tuple[str, int]]:
        """(rule, unreviewed results it selects) per spec, each count at most `cap` + 1."""

        def read(db: Any) -> list[tuple[str, int]]:
            cols = self._columns_of(db)
            counts = []
            for spec in specs:
                total = 0
                if cols.reviews and not spec.empty:
                    for query in (rows_query(spec, since, cap + 1, cols), packed_query(spec, since, cap + 1, cols)):
                        if query is not None:
                            total += int(scalar(db, query.counted, query.params))
                counts.append((spec.rule, min(total, cap + 1)))
            return counts

        return self._run(read)

    def queue_reviewed(self, evaluators: Sequence[str], since: float, cap: int) -> dict[str, int]:
        """Per evaluator, its reviews in force of verdicts made since `since`, each count at most `cap`."""

        def read(db: Any) -> dict[str, int]:
            if not self._columns_of(db).reviews:
                return {}
            return {name: int(scalar(db, *reviewed_query(name, since, cap))) for name in evaluators}

        return self._run(read)

    def reviews_since(self, since: float, reviewer: str | None) -> tuple[int, int]:
        """(reviews written since `since` by `reviewer`, by anyone): every review written, a changed one too."""

        def read(db: Any) -> tuple[int, int]:
            if not self._columns_of(db).reviews:
                return 0, 0
            row = execute(db, *reviews_since_query(since, reviewer)).fetchone()
            return int(row[0] or 0), int(row[1] or 0)

        return self._run(read)
