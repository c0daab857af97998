"""The judges' deployment-wide limits on the shared PostgreSQL store: `evaluators.judges.limits.SharedCounters` on
one table, `judge_limits` (scope, window start in epoch seconds) → count, so that every replica's judge requests
count against one `requests_per_minute` (a window per UTC minute) and its tokens against one `daily_token_budget`
(a window per UTC day).

Each count is one statement, `INSERT ... ON CONFLICT DO UPDATE ... RETURNING`, atomic across replicas: taking a
request adds 1 only while the window's count is under the limit (no row returned: the window is full). The table
is part of the result store's schema (migration 0010: the store creates it when it opens the database, before any
judge runs; until then a count fails and the replicas fall back to their own limits), and windows older than two
days are deleted once an hour. Every statement is bounded (the server's statement_timeout and a client-side
deadline: deadline.py) and runs in a thread (`asyncio.to_thread`) on one dedicated connection (a lock serialises
them); a failed one drops the connection and raises: `SharedLimits` then falls back to each replica's own limits.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg
from sqlalchemy import bindparam, literal_column, select
from sqlalchemy.dialects.postgresql import insert

from monitor.store.postgres.connection import APPLICATION_NAME, Timeouts
from monitor.store.postgres.deadline import execute_bounded
from monitor.store.statements import POSTGRESQL, Statement, bound
from monitor.store.tables import judge_limits

TABLE = "judge_limits"
KEEP_SECONDS = 2 * 86_400  # windows kept: today's and yesterday's day windows outlive every minute window
PRUNE_EVERY_SECONDS = 3_600.0

_l = judge_limits.c
_KEY = [_l.scope, _l.window_start]
_taken = insert(judge_limits).values(
    scope=bindparam("scope"), window_start=bindparam("window"), count=literal_column("1")
)
_TAKE = Statement(  # no row returned: the window is full
    _taken.on_conflict_do_update(
        index_elements=_KEY, set_={"count": _l["count"] + literal_column("1")}, where=_l["count"] < bindparam("limit")
    ).returning(_l["count"])
)
_added = insert(judge_limits).values(scope=bindparam("scope"), window_start=bindparam("window"), count=bindparam("n"))
_ADD = Statement(
    _added.on_conflict_do_update(index_elements=_KEY, set_={"count": _l["count"] + _added.excluded["count"]}).returning(
        _l["count"]
    )
)
_TOTAL = Statement(select(_l["count"]).where(_l.scope == bindparam("scope"), _l.window_start == bindparam("window")))
_PRUNE = Statement(judge_limits.delete().where(_l.window_start < bindparam("before")))


class JudgeLimitCounters:
    """`SharedCounters` on the PostgreSQL store at `url` (its connection opened at the first count)."""

    def __init__(self, url: str, timeouts: Timeouts | None = None, *, clock: Callable[[], float] = time.time) -> None:
        self.url = url
        self.timeouts = timeouts or Timeouts()
        self._clock = clock
        self._conn: psycopg.Connection[Any] | None = None
        self._lock = threading.Lock()
        self._pruned_at = -PRUNE_EVERY_SECONDS
        self._closed = False

    async def take(self, scope: str, window: int, limit: int) -> bool:
        if limit <= 0:
            return True
        params = {"scope": scope, "window": window, "limit": limit}
        return await asyncio.to_thread(self._run, _TAKE, params) is not None

    async def add(self, scope: str, window: int, amount: int) -> int:
        params = {"scope": scope, "window": window, "n": max(0, int(amount))}
        row = await asyncio.to_thread(self._run, _ADD, params)
        return int(row[0]) if row is not None else 0

    async def total(self, scope: str, window: int) -> int:
        row = await asyncio.to_thread(self._run, _TOTAL, {"scope": scope, "window": window})
        return int(row[0]) if row is not None else 0

    async def aclose(self) -> None:
        self._closed = True
        await asyncio.to_thread(self._drop)

    # --- on the connection (threads) ------------------------------------------------------------
    def _run(self, statement: Statement, params: dict[str, Any]) -> Any:
        with self._lock:
            if self._closed:
                raise psycopg.InterfaceError("the judge limit counters are closed")
            try:
                conn = self._connection()
                self._prune(conn)
                return self._execute(conn, statement, params)
            except BaseException:
                self._drop_locked()
                raise

    def _connection(self) -> psycopg.Connection[Any]:
        if self._conn is not None and not self._conn.closed:
            return self._conn
        self._conn = psycopg.connect(
            self.url,
            autocommit=True,
            connect_timeout=max(int(self.timeouts.connect), 1),
            application_name=f"{APPLICATION_NAME}-judge-limits",
            options=self.timeouts.options(),
        )
        return self._conn

    def _prune(self, conn: psycopg.Connection[Any]) -> None:
        now = self._clock()
        if now - self._pruned_at < PRUNE_EVERY_SECONDS:
            return
        self._execute(conn, _PRUNE, {"before": int(now) - KEEP_SECONDS})
        self._pruned_at = now

    def _execute(self, conn: psycopg.Connection[Any], statement: Statement, params: dict[str, Any]) -> Any:
        return execute_bounded(conn, self.timeouts.deadline(), *bound(statement, POSTGRESQL, params))

    def _drop(self) -> None:
        with self._lock:
            self._drop_locked()

    def _drop_locked(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()
