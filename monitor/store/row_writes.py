"""The statements of a write of packed rows (packing.Packed), the same on SQLite and PostgreSQL but the insert of a
trace (each store's own: sqlite.py, postgres/store.py): results inserted, late passing results appended to their
trace's packed array, sessions upserted (session_writes.py) and waiting judgements kept and forgotten
(pending_rows.py), and drift's rows of each trace (signal_writes.py), all in the caller's transaction. Each is one
`executemany` of the rows as packed (tuples)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, insert, update

from monitor.store.packing import Packed
from monitor.store.pending_rows import write_pending
from monitor.store.session_writes import UPSERT_SESSION, forget_earlier_completions
from monitor.store.signal_writes import APPEND_VERDICTS, write_signals
from monitor.store.sql_functions import json_appended, stored_flag, stored_number
from monitor.store.statements import RowStatement, executemany_rows
from monitor.store.tables import results, traces

__all__ = ["APPEND_PASSED", "INSERT_RESULT", "RESULT_ROW", "write_rows"]

# A `results` row as packed (packing._result_row); `score` NaN is stored NULL, `passed` as 0/1.
RESULT_ROW = (
    "created_at", "trace_id", "service", "span_id", "agent", "model", "evaluator", "level", "score", "passed",
    "skip_reason", "explanation", "details", "signature", "session_id",
)  # fmt: skip
_converted = {"score": stored_number(bindparam("score")), "passed": stored_flag(bindparam("passed"))}
INSERT_RESULT = RowStatement(
    insert(results).inline().values({name: _converted.get(name, bindparam(name)) for name in RESULT_ROW}),
    RESULT_ROW,
)
# A late passing result (its PASSED_FIELDS as JSON text) appended to its trace's `passed` array.
APPEND_PASSED = RowStatement(
    update(traces)
    .values(passed=json_appended(traces.c.passed, bindparam("entry")))
    .where(traces.c.trace_id == bindparam("of_trace")),
    ("entry", "of_trace"),
)


def write_rows(db: Any, packed: Packed, insert_trace: RowStatement) -> None:
    """The rows of `packed` but the signatures' upserts (signatures.py), on `db` (either store's connection, in
    the caller's transaction); the traces inserted by `insert_trace` (schema.TRACE_COLUMNS)."""
    if packed.completions:  # a session evaluated again: its earlier completion's rows go first
        forget_earlier_completions(db, packed.completions)
    for statement, rows in ((insert_trace, packed.traces), (INSERT_RESULT, packed.results),
                            (APPEND_PASSED, packed.appended), (UPSERT_SESSION, packed.sessions)):  # fmt: skip
        if rows:
            executemany_rows(db, statement, rows)
    if packed.signals:
        write_signals(db, packed.signals, packed.tools)
    if packed.verdicts:
        executemany_rows(db, APPEND_VERDICTS, packed.verdicts)
    write_pending(db, packed)
