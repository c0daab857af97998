"""The result store, its write side: evaluated traces packed into rows (masked, bounded), queued for a writer
thread and inserted into SQLite (`sqlite.py`) or PostgreSQL (`postgres/`); the schema (`tables.py`), made and
upgraded by one Alembic chain on both databases (`migrations/`, run by `migrate.py`), retention, and the store's
health. The review reads what it writes (`monitor.review`, which builds the reader of a store:
`monitor.review.of_store.reader_of`); the store imports nothing of the read side.

The public modules are the ones `__all__` names; `packing`, `retention`, `row_writes`, `signal_writes` and
`storable` are internal to the package. Importing the package imports none of its modules.
"""

__all__ = [
    "dimension_codes", "dimension_reads", "drift_buckets", "errors", "from_config", "health", "migrate",
    "open_session_rows", "open_sessions_sqlite", "poll_checkpoints", "postgres", "reviews", "rows", "schema",
    "signal_reads", "signal_rows", "signatures", "sql_functions", "sqlite", "statements", "step_tree", "tables",
    "trace_detail", "writer",
]  # fmt: skip
