"""The result store, its write side: evaluated traces packed into rows (masked, bounded), queued for a writer
thread and inserted into SQLite (`sqlite.py`) or PostgreSQL (`postgres/`); the schema and its migrations,
retention, and the store's health. The review reads what it writes (`monitor.review`, which builds the
reader of a store: `monitor.review.of_store.reader_of`); the store imports nothing of the read side."""
