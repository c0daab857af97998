"""The result store a config asks for: SQLite at `store.path`, or PostgreSQL at `store.url`."""

from __future__ import annotations

from monitor.config.signatures import SignaturesConfig
from monitor.config.store import StoreConfig
from monitor.store.health import StoreHealth
from monitor.store.writer import QueuedResultStore


def open_result_store(
    store: StoreConfig,
    *,
    health: StoreHealth,
    prune: bool = True,
    pool_size: int | None = None,
    signatures: SignaturesConfig | None = None,
) -> QueuedResultStore:
    """The configured store (StoreSchemaError for a database from a newer release). `prune`: whether this process
    keeps the retention (the daemon's store; not the evaluation workers'); `pool_size` overrides the config's;
    `signatures`: the `signatures:` section."""
    if store.url is not None:
        from monitor.store.postgres.connection import Timeouts
        from monitor.store.postgres.store import PostgresResultStore

        return PostgresResultStore(
            store.url,
            store.retention,
            store.results,
            prune=prune,
            max_size=store.max_size,
            health=health,
            pool_size=pool_size or store.pool_size,
            timeouts=Timeouts(store.connect_timeout, store.statement_timeout, store.lock_timeout),
            signatures=signatures,
        )
    from monitor.store.sqlite import ResultStore

    return ResultStore(
        store.path,
        store.retention,
        store.results,
        prune=prune,
        max_size=store.max_size,
        health=health,
        signatures=signatures,
    )
