"""The stored results with a verdict since a time, newest first and bounded (a mixin of
`sqlite_reader.StoreReviewReader`, so both databases answer alike): what the start-up rebuild of the windows
replays (metrics/rebuild.py).

Two sources, as the review reads them (sql.py): the `results` rows with a verdict (failing results; passing ones in
the oldest databases and session-level ones with `results: all`) and the passing results packed in `traces.passed`,
each newest first by its time index. A result's variant is its trace's (a session-level result has none, as its
metrics have none). A late passing judge result packed into its trace has the trace's time. Both reads stop at
`limit` rows and at `deadline`; what is kept is then what both sources hold completely: the results after the
newest point where one stopped (so a cut never leaves the failing results without their passing ones).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from sqlalchemy import ColumnElement, bindparam, case, func, select

from monitor.review.sql import EMPTY, ONE, Columns, R, T, packed
from monitor.store.rows import RecentVerdicts, StoredVerdict
from monitor.store.sql_functions import json_item, json_number, newest_traces_first, trace_row_key
from monitor.store.statements import Statement, execute

CHUNK_ROWS = 5_000  # rows fetched between two looks at the deadline


class VerdictReads:
    """`recent_verdicts` over `_run(read)` and `_columns_of(db)`."""

    _run: Callable[..., Any]
    _columns_of: Callable[[Any], Columns]

    def recent_verdicts(self, since: float, limit: int, deadline: float) -> RecentVerdicts:
        """The results with a verdict stored at `since` or later, newest first: at most `limit`, read until the
        `deadline` (time.monotonic()). Raises StoreUnavailable when the store cannot be read."""

        def read(db: Any) -> RecentVerdicts:
            cols = self._columns_of(db)
            rows: list[tuple] = []
            cut: float | None = None
            for query in (_rows_query(cols), _packed_query(cols)):
                if query is None:
                    continue
                if time.monotonic() >= deadline:
                    cut = math.inf  # nothing of this source read: nothing is complete
                    break
                found, stopped = _newest(db, query, {"since": since, "limit": limit + 1}, limit, deadline)
                rows += found
                if stopped is not None:
                    cut = stopped if cut is None else max(cut, stopped)
            rows.sort(key=lambda row: row[0], reverse=True)
            if len(rows) > limit:
                cut = max(cut if cut is not None else -math.inf, float(rows[limit][0]))
            if cut is not None:
                rows = [row for row in rows if float(row[0]) > cut]
            return RecentVerdicts([_verdict(row) for row in rows[:limit]], cut is None, cut)

        result: RecentVerdicts = self._run(read)
        return result


def _newest(
    db: Any, query: Statement, params: dict[str, Any], limit: int, deadline: float
) -> tuple[list[tuple], float | None]:
    """The rows of `query` (newest first), at most `limit`, fetched in chunks until `deadline`; and the time of
    the first row left out (None: every row read)."""
    cursor = execute(db, query, params)
    rows: list[tuple] = []
    while True:
        chunk = cursor.fetchmany(CHUNK_ROWS)
        if not chunk:
            return rows, None
        rows += chunk
        if len(rows) > limit:
            return rows[:limit], float(rows[limit][0])
        if time.monotonic() >= deadline:
            return rows, float(rows[-1][0])  # rows at its time may be left: that time is cut too


def _variant(cols: Columns, session_id: ColumnElement[Any] | None) -> ColumnElement[Any]:
    if "variant" not in cols.present:
        return EMPTY
    trace_variant = func.coalesce(T.c.variant, EMPTY)
    if session_id is None:
        return trace_variant
    return case((session_id.is_(None), trace_variant), else_=EMPTY)


@lru_cache(maxsize=16)
def _rows_query(cols: Columns) -> Statement:
    variant = _variant(cols, R.c.session_id if cols.sessions else None)
    source = R.outerjoin(T, T.c.trace_id == R.c.trace_id) if "variant" in cols.present else R
    query = (
        select(R.c.created_at, R.c.evaluator, R.c.level, R.c.service, R.c.agent, variant, R.c.score, R.c.passed)
        .select_from(source)
        .where(R.c.created_at >= bindparam("since"), R.c.passed.is_not(None))
        .order_by(R.c.created_at.desc(), R.c.id.desc())
        .limit(bindparam("limit"))
    )
    return Statement(query)


@lru_cache(maxsize=16)
def _packed_query(cols: Columns) -> Statement | None:
    if "passed" not in cols.present:
        return None
    j = packed(cols)
    evaluator, level, agent = json_item(j.c.value, 0), json_item(j.c.value, 1), json_item(j.c.value, 3)
    row_key = trace_row_key("t")
    query = (
        select(T.c.created_at, evaluator, level, T.c.service, agent, _variant(cols, None), json_number(j.c.value, 5))
        .add_columns(ONE)
        .select_from(T, j)
        .where(T.c.passed.is_not(None), T.c.created_at >= bindparam("since"))
        .order_by(newest_traces_first(T.c.created_at, row_key, j.c.key))
        .limit(bindparam("limit"))
    )
    return Statement(query)


def _verdict(row: tuple) -> StoredVerdict:
    at, evaluator, level, service, agent, variant, score, passed = row
    return StoredVerdict(
        float(at),
        str(evaluator),
        str(level),
        "" if service is None else str(service),
        None if agent is None else str(agent),
        str(variant or ""),
        None if score is None else float(score),
        bool(int(passed)),
    )
