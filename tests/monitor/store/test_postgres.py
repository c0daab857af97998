"""What only the PostgreSQL result store has to get right, against a real server: replicas migrating together,
a server that is down or goes away, the size budget, one replica pruning at a time, passwords kept out of
messages. (Everything else is held to SQLite's behaviour by the `backend` tests.)"""

from __future__ import annotations

import logging
import random
import threading

import psycopg
import pytest

from monitor.review.models import ResultFilter
from monitor.review.of_store import reader_of
from monitor.review.open_reader import StoreUnreadable, open_store_reader
from monitor.review.postgres_reader import PostgresReviewReader
from monitor.store.health import StoreUnavailable
from monitor.store.migrate import chain
from monitor.store.postgres import connection as pg_connection
from monitor.store.postgres import retention as pg_retention
from monitor.store.postgres.connection import Connection, redacted
from monitor.store.postgres.schema import SCHEMA_TABLE
from monitor.store.postgres.store import PostgresResultStore
from monitor.store.schema import SCHEMA_VERSION, StoreSchemaError
from tests.monitor.store.test_degrade import Recorded
from tests.support.pgserver import PostgresServer
from tests.support.store_builders import failing, outcome, row


def test_replicas_opening_a_new_database_together_migrate_it_once(postgres_url: str) -> None:
    stores: list[PostgresResultStore] = []
    start = threading.Barrier(6)

    def open_one() -> None:
        start.wait()
        stores.append(PostgresResultStore(postgres_url, pool_size=1))

    threads = [threading.Thread(target=open_one) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(stores) == 6 and all(store.available for store in stores)
    with psycopg.connect(postgres_url) as db:
        versions = db.execute(f"SELECT version, applied_by FROM {SCHEMA_TABLE} ORDER BY version").fetchall()
        revisions = db.execute("SELECT version_num FROM alembic_version").fetchall()
    assert [v for v, _ in versions] == list(range(1, SCHEMA_VERSION + 1))  # the legacy markers, written once
    assert len({by for _, by in versions}) == 1 and revisions == [(chain().head,)]  # by one replica
    for n, store in enumerate(stores):  # and every one of them writes
        store.write([outcome(f"{n:032x}", row("a", False))])
    assert stores[0].count("traces") == 6
    for store in stores:
        store.close()


def test_a_database_from_a_newer_release_is_refused(postgres_url: str) -> None:
    PostgresResultStore(postgres_url).close()
    with psycopg.connect(postgres_url, autocommit=True) as db:
        db.execute(f"INSERT INTO {SCHEMA_TABLE} VALUES (%s, 0, 'a newer release')", (SCHEMA_VERSION + 1,))
    with pytest.raises(StoreSchemaError, match="newer than this agent-monitor knows"):
        PostgresResultStore(postgres_url)
    with pytest.raises(StoreSchemaError):
        PostgresReviewReader.open(postgres_url)


def test_a_database_that_is_not_a_result_store_is_unreadable_for_the_cli(postgres_url: str) -> None:
    with pytest.raises(StoreUnreadable, match="not a result store"):
        open_store_reader(postgres_url)


@pytest.mark.integration
def test_a_server_that_is_down_then_up_then_gone_degrades_the_store_and_never_raises(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(pg_connection, "CONNECT_TIMEOUT_SECONDS", 1.0)
    server = PostgresServer()  # its port is chosen; nothing listens there yet
    url = server.url("postgres").replace("postgres@", "postgres:s3cret-pw@")
    seen = Recorded()
    caplog.set_level(logging.INFO)
    try:
        store = PostgresResultStore(url, health=seen.health(), reopen_seconds=0.0)  # no exception: starts all the same
        assert not store.available and seen.errors == {"open": 1} and seen.changes == [False]
        store.write([outcome("1" * 32, row("a", False))])  # dropped, counted
        assert store.write_errors == 1 and seen.errors["write"] == 1
        with pytest.raises(StoreUnavailable, match=r"postgres:\*\*\*@127\.0\.0\.1"):
            failing(store)

        server.start()
        store.write([outcome("2" * 32, row("a", False))])
        assert store.available and seen.changes == [False, True]
        assert [r["trace_id"] for r in failing(store)] == ["2" * 32]
        reader = reader_of(store)
        assert [i.trace_id for i in reader.results(ResultFilter(), 10).items] == ["2" * 32]

        server.stop()  # the server goes away mid-run
        store.write([outcome("3" * 32, row("a", False))])
        assert store.write_errors == 2 and not store.available
        with pytest.raises(StoreUnavailable):
            reader.results(ResultFilter(), 10)
        store.close()
    finally:
        server.stop()
    messages = " ".join(r.getMessage() for r in caplog.records)
    assert "s3cret-pw" not in messages and "s3cret-pw" not in repr(seen.health().failing)


def test_the_size_budget_holds_the_tables_while_new_traces_keep_coming(postgres_url: str) -> None:
    words = [f"w{n:04d}" for n in range(5000)]
    rng = random.Random(7)
    max_size = 1024 * 1024
    store = PostgresResultStore(postgres_url, max_size=max_size)

    def write(first: int, count: int) -> None:
        for n in range(first, first + count):
            text = " ".join(rng.choice(words) for _ in range(600))  # ~3 kB, poorly compressible
            store.write([outcome(f"{n:032x}", row("a", False, explanation=text), given=text)])

    write(0, 400)
    with store._connection() as db:
        before = pg_retention.tables_size(db)
    assert before > max_size
    deleted = store.enforce_size()
    kept = store.count("traces")
    assert deleted > 0 and kept == 400 - deleted and kept == store._budget.traces
    with store._connection() as db:
        after_first = pg_retention.tables_size(db)
    for round_ in range(3):  # more traces come: the oldest go, the freed space is reused
        write(1000 + 400 * round_, 400)
        store.enforce_size()
        assert store.count("traces") <= kept
    with store._connection() as db:
        final = pg_retention.tables_size(db)
    assert final < after_first * 1.5, (before, after_first, final)
    newest = {r["trace_id"] for r in failing(store, limit=1000)}
    assert f"{1000 + 400 * 3 - 1:032x}" in newest and f"{0:032x}" not in newest
    store.close()


def test_one_replica_prunes_at_a_time(postgres_url: str) -> None:
    store = PostgresResultStore(postgres_url, retention_seconds=100)
    store.write([outcome("1" * 32, row("a", False))])
    with psycopg.connect(postgres_url, autocommit=True) as other:
        other.execute("UPDATE results SET created_at = created_at - 1000")
        other.execute("UPDATE traces SET created_at = created_at - 1000")
        with pg_retention.retention_turn(Connection(other)) as mine:  # another replica is pruning
            assert mine
            assert store.prune() == 0 and store.count("traces") == 1
    assert store.prune() == 1 and store.count("traces") == 0
    store.close()


def test_urls_are_shown_without_their_password() -> None:
    assert redacted("postgresql://app:pw@db.internal:5432/agents") == "postgresql://app:***@db.internal:5432/agents"
    assert redacted("postgresql://app@db/agents?sslmode=require") == "postgresql://app@db/agents?sslmode=require"
    assert redacted("postgres://:pw@[::1]/x") == "postgres://:***@[::1]/x"
