"""The bounded write queue: a writer stuck on a database another process holds locked never holds the caller (an
evaluation worker) past its wait, traces the queue has no room for are dropped and counted per result, and
everything queued is written once the database is free again."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest

from monitor.store import write_queue
from monitor.store.sqlite import ResultStore
from tests.monitor.store.test_degrade import Recorded
from tests.support.store_builders import outcome, row


def test_a_stuck_writer_never_holds_a_waiting_write_and_a_full_queue_is_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(write_queue, "MAX_QUEUED_TRACES", 20)
    path = tmp_path / "r.db"
    seen = Recorded()
    lost: dict[str, int] = {}
    health = seen.health()
    health._on_lost = lambda reason, n: lost.__setitem__(reason, lost.get(reason, 0) + n)
    store = ResultStore(path, prune=False, health=health)
    store.start_writer()
    store.write([outcome("1" * 32, row("a", False))], wait=5.0)
    assert store.count("traces") == 1  # waited for: written when `write` returns
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock: the writer waits (busy timeout)
    try:
        store.write([outcome("2" * 32, row("a", False))], wait=0.5)  # given up on after its wait
        for n in range(3, 40):  # no more waits; the queue fills (20 traces), the rest are dropped and counted
            store.write([outcome(f"{n:032x}", row("a", False), row("b", True))], wait=0.5)
        assert "timeout" not in lost  # every write returned while the writer still waits on the lock
        assert lost.get("queue_full", 0) > 0 and lost["queue_full"] % 2 == 0  # per result: two per trace
        assert not store.available
    finally:
        holder.execute("COMMIT")
        holder.close()
    store.flush(30)
    dropped = lost["queue_full"] // 2
    assert store.count("traces") == 39 - dropped  # everything queued was written once the lock was released
    store.write([outcome("f" * 32, row("a", False))], wait=5.0)  # caught up: waits again
    assert store.count("traces") == 40 - dropped and store.available
    store.close()


def test_a_write_one_behind_returns_before_its_rows_and_waits_for_the_writes_before_it() -> None:
    """A worker's batches (`one_behind`): the writer writes one batch while the worker evaluates the next, and a
    batch waits for the rows of the batch before it, so its caller is never more than one batch ahead."""
    release = {"a": threading.Event(), "b": threading.Event()}
    writing_a = threading.Event()
    written: list[str] = []

    def insert(items: list) -> list:
        for item in items:
            writing_a.set()
            release[item].wait(10)
            written.append(item)
        return []

    queue = write_queue.WriteQueue(insert, lambda: None, idle_seconds=60)
    queue.start()
    try:
        started = time.monotonic()
        assert queue.put(["a"], wait=10, one_behind=True)  # nothing before it: returns with "a" unwritten
        assert time.monotonic() - started < 5 and written == []
        assert writing_a.wait(5)  # the writer has "a" (else "b" would join it in one transaction)
        second = threading.Thread(target=queue.put, args=(["b"], 10), kwargs={"one_behind": True})
        second.start()
        second.join(0.3)
        assert second.is_alive()  # waits for "a"
        release["a"].set()
        second.join(5)
        assert not second.is_alive() and written == ["a"]  # "a" written; "b" still on its way
        release["b"].set()
        assert queue.flush(5) and written == ["a", "b"]
    finally:
        for event in release.values():
            event.set()
        queue.stop(5)


def test_once_a_write_one_behind_gave_up_waiting_the_next_ones_do_not_wait_until_the_writer_catches_up() -> None:
    """A database that hangs holds a worker for one wait at most, one batch behind as with its own rows."""
    release = threading.Event()

    def insert(items: list) -> list:  # a database that hangs until released
        release.wait(10)
        return []

    queue = write_queue.WriteQueue(insert, lambda: None, idle_seconds=60)
    queue.start()
    try:
        assert queue.put(["a"], wait=10, one_behind=True)  # the writer hangs on "a"
        started = time.monotonic()
        assert queue.put(["b"], wait=0.3, one_behind=True)  # waits for "a": given up after 0.3 s
        assert queue.put(["c"], wait=10, one_behind=True)  # behind: does not wait for "b"
        assert queue.put(["d"], wait=10, one_behind=True)
        assert time.monotonic() - started < 3
    finally:
        release.set()
        assert queue.flush(10)
        queue.stop(5)
