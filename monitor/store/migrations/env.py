"""Alembic's environment for the result store's chain (monitor/store/migrate.py runs it).

Online, the chain runs on the SQLAlchemy Connection the caller puts in `config.attributes["connection"]`, within
the caller's transaction (migrate.py holds the database's lock and writes the legacy markers in it; nothing here
commits). Offline (`alembic upgrade --sql`, a `sqlalchemy.url` set to the database's URL) it prints the SQL.
"""

from __future__ import annotations

from alembic import context


def run() -> None:
    connection = context.config.attributes.get("connection")
    if context.is_offline_mode():
        url = context.config.get_main_option("sqlalchemy.url")
        context.configure(url=url, literal_binds=True, dialect_opts={"paramstyle": "named"})
    elif connection is not None:
        context.configure(connection=connection, target_metadata=None)
    else:
        raise RuntimeError("the store's migrations run on a connection: monitor.store.migrate.upgrade")
    with context.begin_transaction():
        context.run_migrations()


run()
