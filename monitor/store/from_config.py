"""The result store a config asks for: SQLite at `store.path`, or PostgreSQL at `store.url` (and then the poll
sources' leases)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from monitor.config.signatures import SignaturesConfig
from monitor.config.store import StoreConfig
from monitor.store.health import StoreHealth
from monitor.store.writer import QueuedResultStore

if TYPE_CHECKING:
    from monitor.store.postgres.leases import PollLeases


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
            reopen_seconds=store.reopen_interval,
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
        reopen_seconds=store.reopen_interval,
    )


def poll_leases(store: StoreConfig) -> PollLeases | None:
    """The leases that give each poll source to one replica at a time, when every replica shares the PostgreSQL
    store; None with SQLite (one replica's own store: it polls every source)."""
    if not store.enabled or store.url is None:
        return None
    from monitor.store.postgres.connection import Timeouts
    from monitor.store.postgres.leases import PollLeases

    timeouts = Timeouts(store.connect_timeout, store.statement_timeout, store.lock_timeout)
    return PollLeases(store.url, store.poll_lease, timeouts)
