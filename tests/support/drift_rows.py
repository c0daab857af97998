"""Synthetic rows for drift detection's benches and scenario tests: traces (their `trace_signals` and `trace_tools`
rows, and their verdicts) and completed conversations (`sessions` rows) written at GIVEN times straight into a
store database at the latest schema, in bulk (executemany, one transaction per call: 100k traces take seconds).

    path = create_store(tmp_path / "r.db")          # or create_store(postgres_url)
    write_traces(path, [SyntheticTrace(created_at=t, service="shop", agent="planner", tokens=120,
                                       verdicts=(("relevance", True, 0.9),)) for t in times])
    write_sessions(path, [SyntheticSession(completed_at=t, service="shop", ended="resolved", turns=3)])

`db` is a SQLite path (str or Path), a PostgreSQL URL, or an open connection (sqlite3's, psycopg's, or the store's
postgres/connection.Connection: then the caller commits). A verdict is a `results` row (service, agent, evaluator,
passed, score at the trace's time); with `packed=True` a passing one goes, as the store writes it with `results:
all`, into a `traces` row's packed `passed` array instead (a `traces` row is then written for every trace).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import psycopg
from sqlalchemy import bindparam, insert

from monitor.store.dimension_codes import packed as packed_dimensions
from monitor.store.postgres.connection import Connection
from monitor.store.postgres.store import PostgresResultStore
from monitor.store.row_writes import INSERT_RESULT
from monitor.store.schema import SESSION_COLUMNS
from monitor.store.session_writes import UPSERT_SESSION
from monitor.store.signal_writes import verdict_lists, write_signals
from monitor.store.sqlite import ResultStore
from monitor.store.statements import RowStatement, executemany_rows
from monitor.store.tables import traces

Database = str | Path | sqlite3.Connection | psycopg.Connection | Connection
_ids = itertools.count()
_TRACE_ROW = ("trace_id", "created_at", "service", "passed", "variant")
_INSERT_TRACE = RowStatement(insert(traces).values({name: bindparam(name) for name in _TRACE_ROW}), _TRACE_ROW)


class _ResultLike(NamedTuple):
    evaluator: str
    passed: bool | None


class SyntheticTrace(NamedTuple):
    """One stored trace's drift figures (NULL: `response_chars`, `tokens`, `cost_usd` None) and its verdicts
    (evaluator, passed, score or None); `tools`: the distinct tools it called; `trace_id` "": one is made up;
    `dimensions`: its (dimension, value) pairs (store/dimension_codes.py)."""

    created_at: float
    service: str
    agent: str = ""
    variant: str = ""
    has_error: bool = False
    llm_calls: int = 1
    tool_calls: int = 0
    tool_failures: int = 0
    tools: tuple[str, ...] = ()
    response_chars: int | None = None
    tokens: int | None = None
    cost_usd: float | None = None
    duration_ms: float = 100.0
    verdicts: tuple[tuple[str, bool, float | None], ...] = ()
    trace_id: str = ""
    dimensions: tuple[tuple[str, str], ...] = ()  # (dimension, value) pairs, as explanations read them


class SyntheticSession(NamedTuple):
    """One conversation completed at `completed_at`, ended one way (`ended`), of `turns` turns."""

    completed_at: float
    service: str
    ended: str
    turns: int
    session_id: str = ""


def create_store(location: str | Path) -> str:
    """A store database at `location` (a SQLite path or a PostgreSQL URL) at the latest schema, made (or
    upgraded) by the store itself; `location` as text."""
    text = str(location)
    store = PostgresResultStore(text) if _is_url(text) else ResultStore(text)
    store.close()
    return text


def _is_url(text: str) -> bool:
    return text.startswith(("postgresql://", "postgres://"))


@contextlib.contextmanager
def _connected(db: Database) -> Iterator[Any]:
    """A connection statements.py runs statements on, in one transaction committed at the end (none for a
    connection given: the caller's)."""
    if isinstance(db, sqlite3.Connection | Connection):
        yield db
    elif isinstance(db, psycopg.Connection):
        yield Connection(db)
    elif _is_url(str(db)):
        with psycopg.connect(str(db)) as conn, conn.transaction():
            yield Connection(conn)
    else:
        conn = sqlite3.connect(str(db), isolation_level=None, timeout=30.0)
        try:
            conn.execute("BEGIN IMMEDIATE")
            yield conn
            conn.execute("COMMIT")
        finally:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            conn.close()


def _trace_rows(trace: SyntheticTrace, packed: bool) -> tuple[tuple, list[tuple], list[tuple], tuple | None]:
    trace_id = trace.trace_id or f"synthetic-{next(_ids):012d}"
    at, service, agent = trace.created_at, trace.service, trace.agent
    codes, text = packed_dimensions(trace.dimensions) if trace.dimensions else (None, None)
    failed, passed = verdict_lists(_ResultLike(e, p) for e, p, _ in trace.verdicts)
    signal = (trace_id, at, service, agent, trace.variant, int(trace.has_error), trace.llm_calls, trace.tool_calls,
              trace.tool_failures, trace.response_chars, trace.tokens, trace.cost_usd, trace.duration_ms, codes, text,
              failed, passed)  # fmt: skip
    tools = [(trace_id, tool, at, service, agent) for tool in dict.fromkeys(trace.tools)]
    results, passing = [], []
    for evaluator, passed, score in trace.verdicts:
        if packed and passed:
            passing.append([evaluator, "trace", None, agent or None, None, score, None, None])
        else:
            results.append((at, trace_id, service, None, agent or None, None, evaluator, "trace", score, passed,
                            None, None, None, None, None))  # fmt: skip
    row = (trace_id, at, service, json.dumps(passing) if passing else None, trace.variant) if packed else None
    return signal, tools, results, row


def write_traces(db: Database, rows: Iterable[SyntheticTrace], *, packed: bool = False) -> int:
    """Write the traces `rows` (module docstring) in one transaction; how many."""
    signals: list[tuple] = []
    tools: list[tuple] = []
    results: list[tuple] = []
    trace_rows: list[tuple] = []
    for trace in rows:
        signal, its_tools, its_results, trace_row = _trace_rows(trace, packed)
        signals.append(signal)
        tools += its_tools
        results += its_results
        if trace_row is not None:
            trace_rows.append(trace_row)
    with _connected(db) as conn:
        write_signals(conn, signals, tools)  # as the store writes them
        for statement, batch in ((INSERT_RESULT, results), (_INSERT_TRACE, trace_rows)):
            if batch:
                executemany_rows(conn, statement, batch)
    return len(signals)


def write_sessions(db: Database, rows: Iterable[SyntheticSession]) -> int:
    """Write the conversations `rows` (`sessions` rows, upserted on their id) in one transaction; how many."""
    values = {name: None for name in SESSION_COLUMNS}
    batch = []
    for session in rows:
        at = session.completed_at
        row = dict(values, session_id=session.session_id or f"synthetic-session-{next(_ids):012d}")
        row.update(service=session.service, source="synthetic", started_at=at - 60.0, last_turn_at=at - 1.0)
        row.update(completed_at=at, ended=session.ended, turn_count=session.turns, turns_cut=0, total_tokens=0)
        row.update(failed=0, turns="[]")
        batch.append(tuple(row[name] for name in SESSION_COLUMNS))
    with _connected(db) as conn:
        if batch:
            executemany_rows(conn, UPSERT_SESSION, batch)
    return len(batch)
