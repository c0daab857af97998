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
from typing import Any

from monitor.review.sql import Columns
from monitor.store.rows import RecentVerdicts, StoredVerdict

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
                found, stopped = _newest(db, query, [since, limit + 1], limit, deadline)
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


def _newest(db: Any, sql: str, params: list[Any], limit: int, deadline: float) -> tuple[list[tuple], float | None]:
    """The rows of `sql` (newest first), at most `limit`, fetched in chunks until `deadline`; and the time of the
    first row left out (None: every row read)."""
    cursor = db.execute(sql, params)
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


def _variant(cols: Columns, session_id: str | None) -> str:
    if "variant" not in cols.present:
        return "''"
    trace_variant = "COALESCE(t.variant, '')"
    if session_id is None:
        return trace_variant
    return f"CASE WHEN {session_id} IS NULL THEN {trace_variant} ELSE '' END"


def _rows_query(cols: Columns) -> str:
    variant = _variant(cols, "r.session_id" if cols.sessions else None)
    join = " LEFT JOIN traces t ON t.trace_id = r.trace_id" if "variant" in cols.present else ""
    return (
        f"SELECT r.created_at, r.evaluator, r.level, r.service, r.agent, {variant}, r.score, r.passed"
        f" FROM results r{join} WHERE r.created_at >= ? AND r.passed IS NOT NULL"
        " ORDER BY r.created_at DESC, r.id DESC LIMIT ?"
    )


def _packed_query(cols: Columns) -> str | None:
    if "passed" not in cols.present:
        return None
    d = cols.dialect
    evaluator, level, agent = d.item("j.value", 0), d.item("j.value", 1), d.item("j.value", 3)
    return (
        f"SELECT t.created_at, {evaluator}, {level}, t.service, {agent}, {_variant(cols, None)},"
        f" {d.number(d.item('j.value', 5))}, 1 FROM traces t, {d.each_passed('t.passed')}"
        f" WHERE t.passed IS NOT NULL AND t.created_at >= ?"
        f" ORDER BY t.created_at DESC, t.{d.rowid} DESC{d.passed_order} LIMIT ?"
    )


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
