"""The result store, its write side: evaluated traces packed into rows (masked, bounded), queued for a writer
thread and inserted into SQLite (`sqlite.py`) or PostgreSQL (`postgres/`); the schema and its migrations,
retention, and the store's health. The review reads what it writes (`monitor.review`); `reader()` is the one
place the store reaches the read side."""
