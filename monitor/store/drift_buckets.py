"""The drift job's bucket aggregates kept in the store (`drift_buckets`): a bucket read from the traces' rows once
is kept as JSON, so that the same-hours baselines of the following days, a restart and the other replicas read one
row instead of the bucket's traces. A bucket is kept only once it has ended; the first replica's copy stays (the
copies are equal: the same rows, summed the same way)."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import bindparam, delete, insert, select
from sqlalchemy.dialects import postgresql

from monitor.store.signal_rows import (
    ResultAggregate,
    SessionAggregate,
    ToolAggregate,
    TraceAggregate,
    VariantCount,
    WindowAggregates,
)
from monitor.store.statements import POSTGRESQL, SQLITE, Statement, dialect_of, execute
from monitor.store.tables import drift_buckets as buckets

_KINDS = (TraceAggregate, ToolAggregate, ResultAggregate, SessionAggregate, VariantCount)
_READ = Statement(
    select(buckets.c.aggregates).where(buckets.c.start == bindparam("start"), buckets.c.size == bindparam("size"))
)
_values: dict[str, Any] = {name: bindparam(name) for name in ("start", "size", "aggregates", "stored_at")}
_KEEP = {
    SQLITE: Statement(insert(buckets).prefix_with("OR IGNORE", dialect="sqlite").values(_values)),
    POSTGRESQL: Statement(postgresql.insert(buckets).values(_values).on_conflict_do_nothing()),
}
_FORGET = Statement(delete(buckets).where(buckets.c.start < bindparam("before")))


def encoded(aggregates: WindowAggregates) -> str:
    return json.dumps([[list(row) for row in rows] for rows in aggregates], separators=(",", ":"))


def decoded(text: str) -> WindowAggregates:
    groups = json.loads(text)
    return WindowAggregates(*([kind(*row) for row in rows] for kind, rows in zip(_KINDS, groups, strict=True)))


def stored_bucket(db: Any, start: float, size: float) -> WindowAggregates | None:
    """The bucket [start, start + size) as kept, or None when it was not."""
    row = execute(db, _READ, {"start": start, "size": size}).fetchone()
    return decoded(row[0]) if row is not None else None


def keep_bucket(db: Any, start: float, size: float, aggregates: WindowAggregates, now: float, before: float) -> None:
    """Keep the bucket (unless a copy is there), and forget the buckets that start before `before`."""
    row = {"start": start, "size": size, "aggregates": encoded(aggregates), "stored_at": now}
    execute(db, _KEEP[dialect_of(db)], row)
    execute(db, _FORGET, {"before": before})


__all__ = ["decoded", "encoded", "keep_bucket", "stored_bucket"]
