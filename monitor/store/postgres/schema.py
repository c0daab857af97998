"""The PostgreSQL result store's schema: the same tables as SQLite's in PostgreSQL types (jsonb for the packed JSON,
an identity column for the insertion order SQLite's rowid gives), made and upgraded by the one migration chain
(monitor/store/migrations, run by monitor/store/migrate.py under a transaction-level advisory lock).

`agent_monitor_schema` is the legacy version marker of the releases before the chain (a row per version: when,
by which host and process), still written (migrate.py says why) and read by the review's reader of a
database it does not migrate (migrate.stored_schema).
"""

from __future__ import annotations

from monitor.store.migrate import LEGACY_TABLE
from monitor.store.schema import TRACE_COLUMNS

SCHEMA_TABLE = LEGACY_TABLE
JSON_COLUMNS = frozenset({"passed", "agents", "models", "tools", "detail"})
assert set(TRACE_COLUMNS) > JSON_COLUMNS
