"""The result store's schema as text, to compare databases made by different code: what the migrations create, what
the hand-written chains of earlier releases created (tests/fixtures/store_schema/*.txt, captured from them), and
what an older database becomes once upgraded.

SQLite: per table its columns as `PRAGMA table_xinfo` gives them (declared type, NOT NULL, default, primary key
position: SQLite's type affinity and rowid alias follow from these), then its indexes (`PRAGMA index_list`, their
columns and, for a partial one, its WHERE clause with whitespace normalized); the user_version, auto_vacuum and
journal mode. PostgreSQL: per table its columns from information_schema (type, nullability, default, identity),
its constraints (pg_get_constraintdef) and its indexes (pg_indexes.indexdef), and the versions recorded in
agent_monitor_schema. Alembic's own `alembic_version` is left out (the earlier releases had none).

A revision that changes the schema on purpose writes the fixtures again from a fresh database of the chain:
`python -m tests.support.store_schema` (it starts a PostgreSQL server of its own).
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import psycopg

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "store_schema"
SKIPPED = ("alembic_version",)
_FLAGS = ("WITHOUT ROWID", "AUTOINCREMENT", "CHECK", "REFERENCES")  # what table_xinfo does not show


def _normal(sql: str) -> str:
    return re.sub(r"\s+", " ", sql).strip()


def sqlite_schema(db: sqlite3.Connection) -> str:
    lines = []
    tables = [name for (name,) in db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
    ) if name not in SKIPPED]  # fmt: skip
    for table in tables:
        sql = db.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone()[0]
        flags = [flag for flag in _FLAGS if re.search(rf"\b{flag}\b", sql, re.IGNORECASE)]
        lines.append(f"table {table}{' ' + ' '.join(flags) if flags else ''}")
        for _, name, kind, notnull, default, pk, hidden in db.execute(f"PRAGMA table_xinfo({table})"):
            lines.append(f"  column {name} {kind}{' NOT NULL' if notnull else ''}"
                         f"{f' DEFAULT {default}' if default is not None else ''}{f' pk{pk}' if pk else ''}"
                         f"{f' hidden{hidden}' if hidden else ''}")  # fmt: skip
        for _, index, unique, origin, partial in sorted(db.execute(f"PRAGMA index_list({table})"), key=lambda r: r[1]):
            columns = ", ".join(row[2] for row in db.execute(f"PRAGMA index_info({index})"))
            where = ""
            if partial:
                text = db.execute("SELECT sql FROM sqlite_master WHERE name = ?", (index,)).fetchone()[0]
                where = " WHERE " + _normal(re.split(r"\bWHERE\b", text, maxsplit=1, flags=re.IGNORECASE)[1])
            lines.append(f"  index {index} ({columns}){' UNIQUE' if unique else ''} origin={origin}{where}")
    for pragma in ("user_version", "auto_vacuum", "journal_mode"):
        lines.append(f"pragma {pragma} = {db.execute(f'PRAGMA {pragma}').fetchone()[0]}")
    return "\n".join(lines) + "\n"


_COLUMNS = """SELECT column_name, data_type, is_nullable, column_default, is_identity, identity_generation
FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = %s ORDER BY ordinal_position"""
_CONSTRAINTS = """SELECT conname, pg_get_constraintdef(c.oid) FROM pg_constraint c
JOIN pg_class t ON t.oid = c.conrelid WHERE t.relname = %s AND t.relnamespace = current_schema()::regnamespace
ORDER BY conname"""
_INDEXES = "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() AND tablename = %s"


def postgres_schema(db: psycopg.Connection) -> str:
    lines = []
    tables = [name for (name,) in db.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY table_name"
    ) if name not in SKIPPED]  # fmt: skip
    for table in tables:
        lines.append(f"table {table}")
        for name, kind, nullable, default, identity, generation in db.execute(_COLUMNS, (table,)):
            lines.append(f"  column {name} {kind}{' NOT NULL' if nullable == 'NO' else ''}"
                         f"{f' DEFAULT {default}' if default is not None else ''}"
                         f"{f' IDENTITY {generation}' if identity == 'YES' else ''}")  # fmt: skip
        for name, definition in db.execute(_CONSTRAINTS, (table,)):
            lines.append(f"  constraint {name} {definition}")
        for name, definition in sorted(db.execute(_INDEXES, (table,))):
            lines.append(f"  index {name} {definition}")
    if "agent_monitor_schema" in tables:
        versions = [v for (v,) in db.execute("SELECT version FROM agent_monitor_schema ORDER BY version")]
        lines.append(f"versions {versions}")
    return "\n".join(lines) + "\n"


# The tables of revisions after the legacy chains (the legacy version stays 9): the earlier releases made none.
SINCE_LEGACY = ("drift_buckets", "drift_episodes", "trace_signals", "trace_tools")


def fixture(name: str) -> str:
    return (FIXTURES / f"{name}.txt").read_text()


def without_tables(schema: str, names: tuple[str, ...] = SINCE_LEGACY) -> str:
    """`schema` (as the functions above write it) without the blocks of the tables `names`."""
    lines, skipping = [], False
    for line in schema.splitlines(keepends=True):
        if not line.startswith("  "):
            skipping = line.startswith("table ") and line.split()[1] in names
        if not skipping:
            lines.append(line)
    return "".join(lines)


def main() -> None:  # pragma: no cover - run by hand
    import tempfile

    from monitor.store import migrate
    from tests.support.pgserver import running_server

    with tempfile.TemporaryDirectory() as directory:
        db = sqlite3.connect(Path(directory) / "r.db", isolation_level=None)
        migrate.upgrade(db, "r.db")
        (FIXTURES / "sqlite.txt").write_text(sqlite_schema(db))
        db.close()
    with running_server() as server:
        url = server.new_database()
        with psycopg.connect(url, autocommit=True) as pg:
            migrate.upgrade(pg, url)
            (FIXTURES / "postgresql.txt").write_text(postgres_schema(pg))
    print(f"wrote {FIXTURES}/sqlite.txt and postgresql.txt")


if __name__ == "__main__":
    main()
