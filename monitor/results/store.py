"""ResultStore: every evaluation result in SQLite, so the failing traces behind a red panel can be found.

Written from the evaluation worker thread (one connection, WAL mode); old rows are pruned by
retention. Text from traces is stored bounded.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_TEXT = 4000
FLUSH_TRACES = 200
FLUSH_SECONDS = 1.0

SCHEMA = """
CREATE TABLE IF NOT EXISTS results (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at REAL NOT NULL,
    trace_id TEXT NOT NULL,
    span_id TEXT,
    service TEXT,
    agent TEXT,
    model TEXT,
    evaluator TEXT NOT NULL,
    level TEXT NOT NULL,
    score REAL,
    passed INTEGER,
    skip_reason TEXT,
    explanation TEXT,
    details TEXT
);
CREATE INDEX IF NOT EXISTS results_trace ON results(trace_id);
CREATE INDEX IF NOT EXISTS results_eval_time ON results(evaluator, created_at);
CREATE TABLE IF NOT EXISTS traces (
    trace_id TEXT PRIMARY KEY,
    created_at REAL NOT NULL,
    service TEXT,
    input TEXT,
    output TEXT,
    span_count INTEGER,
    duration_ms REAL,
    has_errors INTEGER
);
CREATE INDEX IF NOT EXISTS traces_time ON traces(created_at);
"""


def _bounded(text: Any) -> str | None:
    if text is None:
        return None
    value = text if isinstance(text, str) else json.dumps(text, default=str, ensure_ascii=False)
    return value if len(value) <= MAX_TEXT else value[: MAX_TEXT - 1] + "…"


@dataclass(slots=True)
class StoredTrace:
    trace_id: str
    service: str
    input: str | None
    output: str | None
    span_count: int
    duration_ms: float
    has_errors: bool


class ResultStore:
    def __init__(self, path: str | Path, retention_seconds: float = 7 * 86400.0) -> None:
        self.path = Path(path)
        self.retention_seconds = retention_seconds
        if str(path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._lock = threading.Lock()
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(SCHEMA)
        self._last_prune = 0.0
        self._last_flush = time.time()
        self._buffer: list[tuple[StoredTrace, float, list[tuple]]] = []

    def write(self, trace: StoredTrace, results: Iterable[Any]) -> None:
        """Buffer one trace and its results; written in batches (every FLUSH_TRACES traces or FLUSH_SECONDS)."""
        now = time.time()
        self._buffer.append((trace, now, self._rows(trace, results, now)))
        if len(self._buffer) >= FLUSH_TRACES or now - self._last_flush >= FLUSH_SECONDS:
            self.flush()

    @staticmethod
    def _rows(trace: StoredTrace, results: Iterable[Any], now: float) -> list[tuple]:
        return [
            (
                now,
                trace.trace_id,
                getattr(r, "span_id", None),
                getattr(r, "service", None) or trace.service,
                getattr(r, "agent_name", None),
                getattr(r, "model", None),
                r.evaluator,
                r.level,
                r.score,
                None if r.passed is None else int(bool(r.passed)),
                getattr(r, "skip_reason", None),
                _bounded(getattr(r, "explanation", None)),
                _bounded(getattr(r, "details", None) or None),
            )
            for r in results
        ]

    def flush(self) -> None:
        """Write every buffered trace in one transaction."""
        buffered, self._buffer = self._buffer, []
        now = time.time()
        self._last_flush = now
        if not buffered:
            return
        traces = [
            (
                t.trace_id,
                created,
                t.service,
                _bounded(t.input),
                _bounded(t.output),
                t.span_count,
                t.duration_ms,
                int(t.has_errors),
            )
            for t, created, _ in buffered
        ]
        rows = [row for _, _, trace_rows in buffered for row in trace_rows]
        with self._lock:
            self._db.execute("BEGIN")
            try:
                self._db.executemany("INSERT OR REPLACE INTO traces VALUES (?, ?, ?, ?, ?, ?, ?, ?)", traces)
                self._db.executemany(
                    "INSERT INTO results (created_at, trace_id, span_id, service, agent, model, evaluator, level,"
                    " score, passed, skip_reason, explanation, details) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    rows,
                )
                self._db.execute("COMMIT")
            except Exception:
                self._db.execute("ROLLBACK")
                raise
        if now - self._last_prune > 300:
            self.prune(now)

    def prune(self, now: float | None = None) -> int:
        cutoff = (now or time.time()) - self.retention_seconds
        with self._lock:
            removed = self._db.execute("DELETE FROM results WHERE created_at < ?", (cutoff,)).rowcount
            self._db.execute("DELETE FROM traces WHERE created_at < ?", (cutoff,))
        self._last_prune = now or time.time()
        return removed

    def failing(self, evaluator: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        """The most recent failing results, newest first (what the on-call SRE looks for)."""
        query = (
            "SELECT trace_id, evaluator, service, agent, score, explanation, created_at FROM results WHERE passed = 0"
        )
        params: list[Any] = []
        if evaluator:
            query += " AND evaluator = ?"
            params.append(evaluator)
        query += " ORDER BY created_at DESC LIMIT ?"
        params.append(limit)
        with self._lock:
            rows = self._db.execute(query, params).fetchall()
        keys = ("trace_id", "evaluator", "service", "agent", "score", "explanation", "created_at")
        return [dict(zip(keys, row)) for row in rows]

    def count(self, table: str = "results") -> int:
        if table not in ("results", "traces"):
            raise ValueError(table)
        with self._lock:
            return int(self._db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])

    def close(self) -> None:
        self.flush()
        with self._lock:
            self._db.close()
