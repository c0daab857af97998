"""SQLiteReviewReader: the ReviewReader of a result store file (models.py), read-only.

The daemon gets one from `of_store.reader_of(store)` (sharing the store's health: a failed read counts as a `read`
error); the CLI opens a file with `SQLiteReviewReader.open(path)` (`--store FILE`). Every read uses a read-only
connection of its own (`mode=ro`, a few kept for reuse), never the writer's: in WAL mode readers and the writer
do not block each other. A database from before schema version 1 is read as it is (no migration: no steps,
agents, models or tools); one from a newer release is refused (StoreSchemaError). A read that fails raises
StoreUnavailable (the API answers 503); a malformed cursor raises ValueError.

Costs: `results` walks the `results` rows newest first by index and, unless `outcome` excludes them, the
traces newest first expanding each one's packed passing results (json_each) until a page is full; a filter that
matches few passing results (an evaluator that rarely passes, an agent seen rarely) reads every trace in the
range for them: narrow it with since/until on big stores (`variant` walks that variant's traces only, by their
(variant, time) index). `breakdown` reads every result in its range.
"""

from __future__ import annotations

import contextlib
import heapq
import os
import sqlite3
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar, get_args

from sqlalchemy import bindparam, column, func, literal_column, select, table

from monitor.review.breakdown_sql import breakdown_queries, spend_query
from monitor.review.drift_reads import DriftStoreReads, sqlite_writing
from monitor.review.explain_reads import ExplainStoreReads
from monitor.review.models import (
    Breakdown,
    BreakdownBy,
    BreakdownGroup,
    BreakdownSort,
    ResultFilter,
    ResultItem,
    ResultsPage,
    TraceDetail,
)
from monitor.review.queue_reads import QueueReads
from monitor.review.review_reads import ReviewReads
from monitor.review.session_reader import SessionReads
from monitor.review.signature_reader import SignatureReads
from monitor.review.sql import (
    Columns,
    OrderKey,
    decode_results_cursor,
    encode_results_cursor,
    passing_query,
    results_query,
    trace_queries,
)
from monitor.review.stored_rows import EXCERPT, detail_of_rows, passing_item, result_item
from monitor.review.verdict_reads import VerdictReads
from monitor.store.health import StoreHealth, StoreUnavailable
from monitor.store.migrate import refuse_newer, stored_schema
from monitor.store.schema import BUSY_TIMEOUT_SECONDS, Database, StoreSchemaError
from monitor.store.statements import Statement, execute

MAX_LIMIT = 1000
IDLE_CONNECTIONS = 4
T = TypeVar("T")


class StoreReviewReader(
    SignatureReads, SessionReads, ReviewReads, QueueReads, VerdictReads, DriftStoreReads, ExplainStoreReads, ABC
):
    """The ReviewReader over the result store's tables, whatever the database. A subclass gives `_connection` (a
    connection of its own, checked), `_writing` (one in a transaction, for the few writes: drift_reads.py),
    `DATABASE_ERRORS` (what its driver raises), `where` (the store, for
    messages), `_columns_of` (the `traces` columns present, in the database's dialect) and `close`."""

    health: StoreHealth
    DATABASE_ERRORS: tuple[type[Exception], ...] = ()

    @property
    @abstractmethod
    def where(self) -> str: ...

    @abstractmethod
    def _connection(self) -> contextlib.AbstractContextManager[Any]: ...

    @abstractmethod
    def _writing(self) -> contextlib.AbstractContextManager[Any]: ...

    def _run(self, read: Callable[[Any], T], writing: bool = False) -> T:
        """`read(db)` on a connection of its own (`writing`: in a transaction of its own, committed when `read`
        returns); a failure counted and raised as StoreUnavailable (a store that is not there: counted only), a
        database from a newer release as StoreSchemaError."""
        failures: tuple[type[Exception], ...] = (*self.DATABASE_ERRORS, StoreUnavailable)
        try:
            with self._writing() if writing else self._connection() as db:
                result = read(db)
        except StoreSchemaError:
            raise
        except failures as exc:
            missing = isinstance(exc, StoreUnavailable)
            self.health.failed("read", exc, counted_only=missing)
            if missing:
                raise
            raise StoreUnavailable(f"the result store {self.where} cannot be read: {exc}") from exc
        self.health.succeeded("read")
        return result

    @abstractmethod
    def _columns_of(self, db: Any) -> Columns: ...

    @abstractmethod
    def close(self) -> None: ...

    # --- ReviewReader ---------------------------------------------------------------------------
    def results(self, where: ResultFilter, limit: int, cursor: str | None = None) -> ResultsPage:
        after = decode_results_cursor(cursor) if cursor is not None else None
        limit = min(max(int(limit), 1), MAX_LIMIT)

        def read(db: Database) -> ResultsPage:
            cols = self._columns_of(db)
            found: list[tuple[OrderKey, ResultItem]] = []
            found += [result_item(row) for row in execute(db, *results_query(where, after, limit + 1, cols, EXCERPT))]
            if where.outcome in (None, "pass") and "passed" in cols.present:
                passing = passing_query(where, after, limit + 1, cols, EXCERPT)
                found += [passing_item(row) for row in execute(db, *passing)]
            page = heapq.nlargest(limit + 1, found, key=lambda pair: pair[0])
            more = len(page) > limit
            page = page[:limit]
            return ResultsPage(
                items=[item for _, item in page], next_cursor=encode_results_cursor(page[-1][0]) if more else None
            )

        return self._run(read)

    def trace(self, trace_id: str) -> TraceDetail | None:
        def read(db: Database) -> TraceDetail | None:
            of_trace, its_results = trace_queries(self._columns_of(db))
            row = execute(db, of_trace, {"trace_id": trace_id}).fetchone()
            rows = execute(db, its_results, {"trace_id": trace_id}).fetchall()
            if row is None and not rows:
                return None
            return detail_of_rows(trace_id, row, rows)

        return self._run(read)

    def breakdown(
        self,
        by: BreakdownBy,
        evaluator: str | None = None,
        since: float | None = None,
        until: float | None = None,
        variant: str | None = None,
        sort: BreakdownSort = "failures",
    ) -> Breakdown:
        if by not in get_args(BreakdownBy):
            raise ValueError(f"cannot break down by {by!r}")
        if sort not in get_args(BreakdownSort):
            raise ValueError(f"cannot sort a breakdown by {sort!r}")
        where = ResultFilter(evaluator=evaluator, variant=variant, since=since, until=until)

        def read(db: Database) -> list[BreakdownGroup]:
            cols = self._columns_of(db)
            counts: dict[str, list[int]] = {}
            for statement, params in breakdown_queries(by, where, cols):
                for value, passed, failed, skipped in execute(db, statement, params):
                    group = counts.setdefault(str(value), [0, 0, 0])
                    group[0] += passed or 0
                    group[1] += failed or 0
                    group[2] += skipped or 0
            spend: dict[str, tuple[int, float | None, int]] = {}
            query = spend_query(by, where, cols)
            if query is not None:
                for value, calls, usd, priced, unpriced in execute(db, *query):
                    spend[str(value)] = (int(calls or 0), float(usd) if priced else None, int(unpriced or 0))
            groups = []
            for value in {**counts, **spend}:
                p, f, s = counts.get(value, (0, 0, 0))
                calls, usd, unpriced = spend.get(value, (0, None, 0))
                if p or f or s or calls:
                    groups.append(
                        BreakdownGroup(
                            value=value,
                            passed=p,
                            failed=f,
                            skipped=s,
                            pass_ratio=p / (p + f) if p + f else None,
                            calls=calls,
                            cost_usd=usd,
                            unpriced_calls=unpriced,
                        )
                    )
            return sorted(groups, key=_sort_key(sort))

        groups = self._run(read)
        return Breakdown(
            evaluator=evaluator, variant=variant, by=by, since=since, until=until, sort=sort, groups=groups
        )


def _sort_key(sort: BreakdownSort) -> Callable[[BreakdownGroup], tuple]:
    """Most failures first (then most results), or with `cost` the most spend first (then most failures)."""

    def failures(g: BreakdownGroup) -> tuple:
        return (-g.failed, -(g.passed + g.failed + g.skipped), g.value)

    if sort == "cost":
        return lambda g: (-(g.cost_usd or 0.0), -g.unpriced_calls, *failures(g))
    return failures


class SQLiteReviewReader(StoreReviewReader):
    DATABASE_ERRORS = (sqlite3.Error, OSError)  # StoreUnavailable from `_connection`: no file

    def __init__(self, path: str | Path, *, health: StoreHealth | None = None) -> None:
        self.path = Path(path)
        self.health = health if health is not None else StoreHealth(quiet=True)
        self._lock = threading.Lock()
        self._idle: list[sqlite3.Connection] = []
        self._identity: tuple[int, int] | None = None
        self._columns: Columns | None = None

    @classmethod
    def open(cls, path: str | Path) -> SQLiteReviewReader:
        """A reader of the store file at `path`, checked now: StoreUnavailable when it is missing or is not a
        result store, StoreSchemaError when it is from a newer release."""
        if not Path(path).is_file():
            raise StoreUnavailable(f"{path}: no such file")
        reader = cls(path)
        reader._run(lambda db: None)
        return reader

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for db in idle:
            db.close()

    # --- connections ----------------------------------------------------------------------------
    @property
    def where(self) -> str:
        return str(self.path)

    @contextlib.contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        identity = _identity(self.path)
        if identity is None:
            raise StoreUnavailable(f"the result store {self.path} does not exist")
        with self._lock:
            if identity != self._identity:  # a new file (the store re-created it): the old connections go
                stale, self._idle, self._identity, self._columns = self._idle, [], identity, None
            else:
                stale = []
            db = self._idle.pop() if self._idle else None
        for old in stale:
            old.close()
        db = db or self._connect()
        try:
            yield db
        except BaseException:
            db.close()
            raise
        with self._lock:
            if len(self._idle) < IDLE_CONNECTIONS and identity == self._identity:
                self._idle.append(db)
                return
        db.close()

    @contextlib.contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        if _identity(self.path) is None:
            raise StoreUnavailable(f"the result store {self.path} does not exist")
        with sqlite_writing(self.path, BUSY_TIMEOUT_SECONDS) as db:
            yield db

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(
            f"{self.path.resolve().as_uri()}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_SECONDS, check_same_thread=False
        )
        try:
            refuse_newer(stored_schema(db), self.path)
            tables = {name for (name,) in execute(db, _TABLES)}
            if not {"results", "traces"} <= tables:
                raise StoreUnavailable(f"{self.path} is not a result store (no results and traces tables)")
        except BaseException:
            db.close()
            raise
        return db

    def _columns_of(self, db: sqlite3.Connection) -> Columns:
        columns = self._columns
        if columns is None:
            present = {name for (name,) in execute(db, _COLUMN_NAMES, {"table": "traces"})}
            result_columns = {name for (name,) in execute(db, _COLUMN_NAMES, {"table": "results"})}
            signed, sessions = "signature" in result_columns, "session_id" in result_columns
            reviews = "reviews" in {name for (name,) in execute(db, _TABLES)}
            columns = self._columns = Columns(frozenset(present), signatures=signed, sessions=sessions, reviews=reviews)
        return columns


# The schema SQLite describes (its table-valued pragma functions and sqlite_master).
_COLUMN_NAMES = Statement(select(column("name")).select_from(func.pragma_table_info(bindparam("table"))))
_SQLITE_MASTER = table("sqlite_master", column("type"), column("name"))
_TABLES = Statement(select(_SQLITE_MASTER.c.name).where(_SQLITE_MASTER.c.type == literal_column("'table'")))


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_dev, stat.st_ino
