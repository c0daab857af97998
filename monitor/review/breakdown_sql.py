"""The SQL of the review's breakdowns (sqlite_reader.StoreReviewReader.breakdown): results counted per group (a
service, agent, model, tool or variant) and the spend of the stored traces per group, on both databases.

The results come from the `results` rows and from the passing results packed in `traces.passed` (sql.py); a
group's missing value is "". Each (by, shape of the filter) has its statements built once.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from sqlalchemy import ColumnElement, Select, bindparam, case, func, select

from monitor.review.models import ResultFilter
from monitor.review.sql import EMPTY, FIRST, ONE, ZERO, Columns, R, T, bound, packed, time_range
from monitor.store.sql_functions import json_elements, json_item, json_length, json_number
from monitor.store.statements import Statement

BREAKDOWN_FIELDS = ("evaluator", "variant", "since", "until")  # of the filter, what a breakdown takes


def breakdown_queries(by: str, where: ResultFilter, cols: Columns) -> list[tuple[Statement, dict[str, Any]]]:
    """(statement, params) pairs, each giving rows (value, passed, failed, skipped): the `results` rows, then the
    packed passing results (summed by array length when no evaluator is asked for and none need expanding).
    `where`: its evaluator, variant and time range."""
    statements = _breakdown(by, _fields(where), where.variant == "", cols)
    params = bound(where)
    return [(statement, params) for statement in statements]


def spend_query(by: str, where: ResultFilter, cols: Columns) -> tuple[Statement, dict[str, Any]] | None:
    """(statement, params) giving rows (value, calls, cost USD or NULL, priced entries, unpriced calls): the spend
    of the stored traces in `where`'s range and variant, from their review detail (store/packing.py): per model
    or agent its own calls, per service, variant or tool every call of the traces. None for a database from
    before the review detail."""
    if "detail" not in cols.present:
        return None
    return _spend(by, _fields(where) - {"evaluator"}, where.variant == "", cols), bound(where)


def _fields(where: ResultFilter) -> frozenset[str]:
    return frozenset(name for name in BREAKDOWN_FIELDS if getattr(where, name) is not None)


def _count_if(condition: ColumnElement[bool]) -> ColumnElement[Any]:
    return func.sum(case((condition, ONE), else_=ZERO))


def _tools(cols: Columns) -> Any:
    """The FROM item `tool` of the trace's tool names: tool.value."""
    return json_elements(cols("tools"), "tool", as_text=True)


@lru_cache(maxsize=256)
def _breakdown(by: str, fields: frozenset[str], no_variant: bool, cols: Columns) -> tuple[Statement, Statement]:
    return Statement(_rows_breakdown(by, fields, no_variant, cols)), Statement(
        _packed_breakdown(by, fields, no_variant, cols)
    )


def _rows_breakdown(by: str, fields: frozenset[str], no_variant: bool, cols: Columns) -> Select[Any]:
    tool = _tools(cols)
    where: list[ColumnElement[bool]] = []
    if "evaluator" in fields:
        where.append(R.c.evaluator == bindparam("evaluator"))
    if "variant" in fields:
        where.append(cols.variant_is(no_variant, indexed=False))
    where += time_range(R.c.created_at, fields)
    group = {
        "service": lambda: func.coalesce(R.c.service, EMPTY),
        "agent": lambda: cols.agent(R.c.agent),
        "model": lambda: cols.model(R.c.model),
        "tool": lambda: tool.c.value,
        "variant": lambda: cols.variant,
    }[by]()
    traces_needed = by != "service" or "variant" in fields
    source = R.outerjoin(T, T.c.trace_id == R.c.trace_id) if traces_needed else R
    query = select(group, _count_if(R.c.passed == ONE), _count_if(R.c.passed == ZERO), _count_if(R.c.passed.is_(None)))
    query = query.select_from(source, *([tool] if by == "tool" else []))
    return query.where(*where).group_by(FIRST)


def _packed_breakdown(by: str, fields: frozenset[str], no_variant: bool, cols: Columns) -> Select[Any]:
    tool, j = _tools(cols), packed(cols)
    where: list[ColumnElement[bool]] = [T.c.passed.is_not(None)]
    if "variant" in fields:
        where.append(cols.variant_is(no_variant))
    where += time_range(T.c.created_at, fields)
    per_trace: dict[str, Any] = {
        "service": lambda: func.coalesce(T.c.service, EMPTY),
        "tool": lambda: tool.c.value,
        "variant": lambda: cols.variant,
    }
    tools = [tool] if by == "tool" else []
    count: ColumnElement[Any]
    if by in per_trace and "evaluator" not in fields:
        group, count, source = per_trace[by](), func.sum(json_length(T.c.passed)), [T, *tools]
    else:
        if "evaluator" in fields:
            where.append(json_item(j.c.value, 0) == bindparam("evaluator"))
        group = {
            **per_trace,
            "agent": lambda: cols.agent(json_item(j.c.value, 3)),
            "model": lambda: cols.model(json_item(j.c.value, 4)),
        }[by]()
        count, source = func.count(), [T, j, *tools]
    return select(group, count, ZERO, ZERO).select_from(*source).where(*where).group_by(FIRST)


@lru_cache(maxsize=128)
def _spend(by: str, fields: frozenset[str], no_variant: bool, cols: Columns) -> Statement:
    where: list[ColumnElement[bool]] = [T.c.detail.is_not(None)]
    if "variant" in fields:
        where.append(cols.variant_is(no_variant))
    where += time_range(T.c.created_at, fields)
    tool = _tools(cols)
    if by == "agent":  # [agent, calls, cost, unpriced]
        s = json_elements(T.c.detail, "s", member="agent_spend")
        calls, cost, unpriced = 1, 2, 3
        group = func.coalesce(json_item(s.c.value, 0), EMPTY)
    else:  # models: [model, calls, input, output, cost, unpriced]
        s = json_elements(T.c.detail, "s", member="models")
        calls, cost, unpriced = 1, 4, 5
        group = {
            "service": lambda: func.coalesce(T.c.service, EMPTY),
            "model": lambda: func.coalesce(json_item(s.c.value, 0), EMPTY),
            "tool": lambda: tool.c.value,
            "variant": lambda: cols.variant,
        }[by]()
    value = json_number(s.c.value, cost)
    query = select(group, func.sum(json_number(s.c.value, calls)), func.sum(value), func.count(value))
    query = query.add_columns(func.sum(json_number(s.c.value, unpriced)))
    query = query.select_from(T, s, *([tool] if by == "tool" else []))
    return Statement(query.where(*where).group_by(FIRST))
