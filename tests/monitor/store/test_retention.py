"""Retention by age and by size, kept by the daemon store's writer thread."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

import pytest

from monitor.store import retention
from monitor.store import writer as writer_module
from monitor.store.sqlite import ResultStore
from tests.monitor.store.test_schema import unversioned_store
from tests.support.store_builders import outcome, row

KiB = 1024


def fill(store: ResultStore, traces: int, first: int = 0, text: int = 3000) -> None:
    """`traces` traces of about `text` bytes each, trace n created at time n (oldest first; its drift row too)."""
    for n in range(first, first + traces):
        trace_id = f"{n:032x}"
        store.write([outcome(trace_id, row("a", False), row("b", None, "error"), row("c", True),
                             given=f"{n} " + "q" * text)])  # fmt: skip
        with store._lock:
            assert store._db is not None
            store._db.execute("UPDATE traces SET created_at = ? WHERE trace_id = ?", (n, trace_id))
            store._db.execute("UPDATE results SET created_at = ? WHERE trace_id = ?", (n, trace_id))
            store._db.execute("UPDATE trace_signals SET created_at = ? WHERE trace_id = ?", (n, trace_id))


def kept(path: Path) -> list[int]:
    with sqlite3.connect(path) as db:
        return [int(t, 16) for (t,) in db.execute("SELECT trace_id FROM traces ORDER BY trace_id")]


def test_the_writer_thread_deletes_what_passed_the_retention(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(writer_module, "PRUNE_EVERY_SECONDS", 0.0)  # due at every batch
    store = ResultStore(tmp_path / "r.db", retention_seconds=3600)

    async def scenario() -> None:
        await store.start()
        store.write([outcome("1" * 32, row("a", False))])
        store.flush()
        with store._lock:
            assert store._db is not None
            store._db.execute("UPDATE results SET created_at = created_at - 7200")
            store._db.execute("UPDATE traces SET created_at = created_at - 7200")
        store.write([outcome("2" * 32, row("a", False))])
        store.flush()
        await store.shutdown(5.0)

    asyncio.run(scenario())
    assert kept(tmp_path / "r.db") == [int("2" * 32, 16)]
    with sqlite3.connect(tmp_path / "r.db") as db:
        assert [t for (t,) in db.execute("SELECT trace_id FROM results")] == ["2" * 32]


def test_past_max_size_the_oldest_traces_go_and_the_file_shrinks(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    cap = 512 * KiB
    store = ResultStore(path, max_size=cap, retention_seconds=1e12)
    fill(store, 400)  # about 1.3 MB
    assert retention.size_on_disk(path) > 2 * cap
    deleted = store.enforce_size()
    assert retention.size_on_disk(path) <= cap  # the database file and its WAL, on disk
    ids = kept(path)
    assert deleted == 400 - len(ids) and 0 < len(ids) < 200
    assert ids == list(range(400 - len(ids), 400))  # the newest kept, the oldest gone
    with sqlite3.connect(path) as db:  # and their results with them
        orphans = db.execute("SELECT COUNT(*) FROM results WHERE trace_id NOT IN (SELECT trace_id FROM traces)")
        assert orphans.fetchone()[0] == 0
        assert db.execute("SELECT COUNT(*) FROM results").fetchone()[0] == 2 * len(ids)
    assert store.enforce_size() == 0  # under the cap: nothing more
    store.close()


def test_the_writer_thread_holds_the_size_while_traces_keep_coming(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(writer_module, "SIZE_CHECK_EVERY_SECONDS", 0.0)
    path = tmp_path / "r.db"
    cap = 512 * KiB
    store = ResultStore(path, max_size=cap, retention_seconds=1e12)

    async def scenario() -> None:
        await store.start()
        for batch in range(10):
            store.write([outcome(f"{batch:08x}{n:024x}", row("a", False), given="w" * 3000) for n in range(50)])
            store.flush()
        await store.shutdown(5.0)

    asyncio.run(scenario())
    assert retention.size_on_disk(path) <= cap * 1.2  # checked after each batch: at most a batch over
    with sqlite3.connect(path) as db:
        first = db.execute("SELECT MIN(trace_id) FROM traces").fetchone()[0]
    assert first.startswith("0000000") and not first.startswith("00000000")  # the first batches went


def test_an_old_database_that_cannot_shrink_is_not_emptied(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    unversioned_store(path)  # auto_vacuum NONE: freed pages are reused, the file keeps its size
    cap = 512 * KiB  # the empty schema alone takes a page per table and index (about 230 KiB)
    store = ResultStore(path, max_size=cap, retention_seconds=1e12)
    fill(store, 200, first=10)
    before = retention.size_on_disk(path)
    assert before > cap
    assert store.enforce_size() > 0
    with store._lock:
        assert store._db is not None
        assert retention.used_bytes(store._db) <= 0.9 * cap
    ids = [n for n in kept(path) if n < 1000]  # the two unversioned traces are the newest: kept
    assert len(ids) > 10 and ids == list(range(210 - len(ids), 210))
    assert store.enforce_size() == 0  # still over on disk, but its data fits: nothing more is deleted
    assert [n for n in kept(path) if n < 1000] == ids
    fill(store, 20, first=300)  # the freed pages take the new rows: the file does not grow
    assert retention.size_on_disk(path) <= before * 1.05
    store.close()


def test_rows_from_the_same_moment_go_together(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "r.db", max_size=10**9)
    store.write([outcome(f"{n:032x}", row("a", False), given="z" * 2000) for n in range(50)])
    started = time.time()
    with store._lock:
        assert store._db is not None
        deleted = retention.delete_oldest_chunk(store._db, 1)  # everything is over a 1-byte cap
    assert deleted == 50 and store.count("traces") == 0 and store.count("results") == 0
    assert time.time() - started < 5
    store.close()
