"""Explanations' reads of the store (monitor/explain): the traces of one time range with their dimensions and
verdicts (`trace_signals`, by its time index, newest first, at most `limit`), and the traces of one failure
signature in a range (`results`, by `results_signature`). Plain rows: the reader turns them into columns."""

from __future__ import annotations

from typing import Any, NamedTuple

from sqlalchemy import Text, bindparam, cast, literal_column, or_, select

from monitor.store.statements import Statement, execute
from monitor.store.tables import results, trace_signals

__all__ = ["DimensionRead", "dimension_rows", "signature_trace_ids"]

S = trace_signals


class DimensionRead(NamedTuple):
    """The rows of one range as columns, newest first; `truncated`: the range held more than the limit."""

    trace_ids: list[str]
    services: list[str]
    agents: list[str]
    variants: list[str]
    blobs: list[bytes | None]
    texts: list[str | None]
    failed: list[str | None]  # "|name|name|" (signal_writes.verdict_lists)
    passed: list[str | None]
    truncated: bool


COLUMNS = ("trace_id", "service", "agent", "variant", "dimensions", "dimension_text", "failed_evaluators",
           "passed_evaluators")  # fmt: skip
_service = cast(bindparam("service"), Text)  # typed: PostgreSQL cannot infer the type of `$n IS NULL`
_ROWS = Statement(
    select(*(S.c[name] for name in COLUMNS))
    .where(S.c.created_at >= bindparam("since"), S.c.created_at < bindparam("until"))
    .where(or_(_service.is_(None), S.c.service == _service))
    .order_by(S.c.created_at.desc())
    .limit(bindparam("limit"))
)
_SIGNATURE = Statement(
    select(results.c.trace_id).distinct().where(
        results.c.signature == bindparam("signature"),
        results.c.created_at >= bindparam("since"),
        results.c.created_at < bindparam("until"),
        results.c.passed == literal_column("0"),
    )
    .limit(bindparam("limit"))
)  # fmt: skip


def dimension_rows(db: Any, since: float, until: float, service: str | None, limit: int) -> DimensionRead:
    """The traces stored at `since` <= time < `until` (of `service`; None: any), at most `limit`, newest first."""
    found = execute(db, _ROWS, {"since": since, "until": until, "service": service, "limit": limit + 1}).fetchall()
    truncated = len(found) > limit
    if truncated:
        del found[limit:]
    columns = list(zip(*found, strict=True)) if found else [()] * 8
    ids, services, agents, variants, blobs, texts, failed, passed = (list(c) for c in columns)
    blobs = [bytes(b) if isinstance(b, memoryview) else b for b in blobs]
    return DimensionRead(ids, services, agents, variants, blobs, texts, failed, passed, truncated)


def signature_trace_ids(db: Any, signature: str, since: float, until: float, limit: int) -> set[str]:
    """The traces with a failing result of `signature` evaluated at `since` <= time < `until` (at most `limit`)."""
    params = {"signature": signature, "since": since, "until": until, "limit": limit}
    return {row[0] for row in execute(db, _SIGNATURE, params)}
