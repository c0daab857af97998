"""The SQL of the review's failure signatures (signature_reader.py), on both databases (the `sql.Dialect`s).

Counts come from the failing `results` rows by their signature (index `results_signature(signature,
created_at)` for one signature; the time index for a range); the signature's own facts (template, first/last
seen, where seen) from the `signatures` table. Agent and variant filters join the result's trace, as the results
list does (`sql.py`). Cursors are base64 JSON: [since, until, offset] for the list (a page of an absolute range,
so a relative `since` does not shift the pages), [since, until, time, trace id] for a signature's traces.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from monitor.review.signature_models import SignatureFilter
from monitor.review.sql import Columns, Conditions

MAX_GROUPS = 5000  # signatures ranked per range (the busiest first)
MAX_CURSOR_CHARS = 256
SIGNATURE_FIELDS = (
    "id, version, evaluator, level, agent, step_kind, step_name, error_type, template, example, first_seen,"
    " last_seen, count, services, agents, models, variants, versions, example_traces, regressed_at"
)


def filtered(where: SignatureFilter, cols: Columns, since: float, until: float) -> tuple[str, Conditions]:
    """(the FROM clause, the WHERE conditions) of the failing results with a signature matching `where` in
    [since, until)."""
    conditions = Conditions("r.signature IS NOT NULL")
    join = ""
    if where.evaluator is not None:
        conditions.add("r.evaluator = ?", where.evaluator)
    if where.service is not None:
        conditions.add("r.service = ?", where.service)
    if where.agent is not None:
        conditions.add(f"COALESCE(r.agent, {cols.first('agents')}, '') = ?", where.agent)
        join = " LEFT JOIN traces t ON t.trace_id = r.trace_id"
    if where.variant is not None:
        conditions.add(cols.variant_is(where.variant, indexed=False), where.variant)
        join = " LEFT JOIN traces t ON t.trace_id = r.trace_id"
    conditions.add("r.created_at >= ?", since)
    conditions.add("r.created_at < ?", until)
    return f"results r{join}", conditions


def counts_query(where: SignatureFilter, cols: Columns, since: float, until: float, one: str | None = None) -> tuple:
    """(sql, params) of rows (signature, results, traces) in [since, until), the busiest first (`one`: only it)."""
    source, conditions = filtered(where, cols, since, until)
    if one is not None:
        conditions.add("r.signature = ?", one)
    sql = (
        f"SELECT r.signature, COUNT(*), COUNT(DISTINCT r.trace_id) FROM {source}{conditions.sql}"
        " GROUP BY r.signature ORDER BY 2 DESC, 1 LIMIT ?"
    )
    return sql, [*conditions.params, MAX_GROUPS]


def trend_query(where: SignatureFilter, cols: Columns, ids: Sequence[str], step: float) -> tuple:
    """(sql, params) of rows (signature, bucket index, results) of `ids` over the range of `where`."""
    source, conditions = filtered(where, cols, where.since, where.until)
    conditions.add(f"r.signature IN ({marks(ids)})", *ids)
    bucket = cols.dialect.bucket("(r.created_at - ?) / ?")
    sql = f"SELECT r.signature, {bucket}, COUNT(*) FROM {source}{conditions.sql} GROUP BY 1, 2"
    return sql, [where.since, step, *conditions.params]


def rows_query(ids: Sequence[str]) -> tuple:
    return f"SELECT {SIGNATURE_FIELDS} FROM signatures WHERE id IN ({marks(ids)})", list(ids)


def traces_query(signature: str, where: SignatureFilter, after: tuple[float, str] | None, limit: int) -> tuple:
    """(sql, params) of rows (trace id, its newest result with the signature) in the range, newest first."""
    conditions = Conditions("r.signature = ?", "r.created_at >= ?", "r.created_at < ?")
    conditions.params += [signature, where.since, where.until]
    having, params = "", []
    if after is not None:
        having = " HAVING MAX(r.created_at) < ? OR (MAX(r.created_at) = ? AND r.trace_id < ?)"
        params = [after[0], after[0], after[1]]
    sql = (
        f"SELECT r.trace_id, MAX(r.created_at) FROM results r{conditions.sql} GROUP BY r.trace_id{having}"
        " ORDER BY 2 DESC, 1 DESC LIMIT ?"
    )
    return sql, [*conditions.params, *params, limit]


def verdicts_query(trace_ids: Sequence[str]) -> tuple:
    """(sql, params) of the failing results of the traces, in evaluation order."""
    sql = (
        "SELECT r.trace_id, r.created_at, r.evaluator, r.level, r.explanation, r.score, r.signature, r.agent,"
        f" r.model, r.span_id, r.service FROM results r WHERE r.trace_id IN ({marks(trace_ids)}) AND r.passed = 0"
        " ORDER BY r.id"
    )
    return sql, list(trace_ids)


def trace_variants_query(trace_ids: Sequence[str], cols: Columns) -> tuple:
    sql = f"SELECT t.trace_id, t.service, {cols.variant} FROM traces t WHERE t.trace_id IN ({marks(trace_ids)})"
    return sql, list(trace_ids)


def variant_counts_query(cols: Columns, variants: Sequence[str], since: float, until: float) -> tuple:
    """(sql, params) of rows (signature, variant, results) of the variants' traces in [since, until)."""
    sql = (
        f"SELECT r.signature, {cols.variant}, COUNT(*) FROM results r JOIN traces t ON t.trace_id = r.trace_id"
        f" WHERE r.signature IS NOT NULL AND r.created_at >= ? AND r.created_at < ? AND {cols.variant}"
        f" IN ({marks(variants)}) GROUP BY 1, 2"
    )
    return sql, [since, until, *variants]


def variant_traces_query(cols: Columns, variants: Sequence[str], since: float, until: float) -> tuple:
    """(sql, params) of rows (variant, stored traces) in [since, until)."""
    sql = (
        f"SELECT {cols.variant}, COUNT(*) FROM traces t WHERE t.created_at >= ? AND t.created_at < ?"
        f" AND {cols.variant} IN ({marks(variants)}) GROUP BY 1"
    )
    return sql, [since, until, *variants]


def marks(values: Sequence[Any]) -> str:
    return ", ".join("?" for _ in values)
