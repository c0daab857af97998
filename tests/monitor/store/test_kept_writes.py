"""`hold_unwritten` (the intake log is on): the evaluated traces of a write the database fails as a whole are kept
and written once it takes writes again, never counted lost meanwhile; `settlement` tells which traces still wait
for their rows; a kept trace the database has already (a commit whose answer was lost) is not written twice; past
MAX_KEPT_TRACES what does not fit is dropped, counted and settled (lost for good, the log lets it go).

A real SQLite store made read-only with `PRAGMA query_only=ON` on its own connection (SQLITE_READONLY on every
write, as a database refusing writes does; tests run as root, so file permissions would not)."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from monitor.store import writer
from monitor.store.sqlite import ResultStore
from tests.monitor.store.test_degrade import Recorded, set_pragma
from tests.support.store_builders import outcome, row

WAIT_SECONDS = 30.0


def held_store(path: Path, lost: dict[str, int]) -> ResultStore:
    seen = Recorded()
    health = seen.health()
    health._on_lost = lambda reason, n: lost.__setitem__(reason, lost.get(reason, 0) + n)
    store = ResultStore(path, prune=False, health=health)
    store.hold_unwritten()
    store.start_writer()
    return store


def ids(*numbers: int) -> list[str]:
    return [f"{n:032x}" for n in numbers]


def settled_within(store: ResultStore, expected: set[str], timeout: float = WAIT_SECONDS) -> set[str]:
    """Every trace id `settlement` tells until those expected are all among them (or the timeout)."""
    seen: set[str] = set()
    deadline = time.monotonic() + timeout
    while not expected <= seen and time.monotonic() < deadline:
        seen.update(store.settlement([])[1])
        time.sleep(0.05)
    return seen


def results_per_trace(path: Path) -> dict[str, int]:
    with sqlite3.connect(path) as db:
        return dict(db.execute("SELECT trace_id, COUNT(*) FROM results GROUP BY trace_id").fetchall())


def test_a_write_the_database_refuses_is_kept_and_written_once_it_takes_writes_again(tmp_path: Path) -> None:
    path, lost = tmp_path / "r.db", {}
    store = held_store(path, lost)
    first = ids(1)
    store.write([outcome(first[0], row("a", False))], wait=5.0)
    assert store.settlement(first) == ([], first)  # written before `write` returned: nothing waits
    set_pragma(store, "query_only=ON")
    refused = ids(2, 3, 4)
    for trace_id in refused:
        store.write([outcome(trace_id, row("a", False))], wait=5.0)
    waiting, settled = store.settlement(refused)
    assert waiting == refused and settled == []  # kept, not settled: the log keeps their requests
    assert not store.available and lost == {}  # reported failing, nothing counted lost
    set_pragma(store, "query_only=OFF")
    assert settled_within(store, set(refused)) == set(refused)
    assert results_per_trace(path) == dict.fromkeys(first + refused, 1)  # each written once
    assert store.available and lost == {}
    store.close()


def test_a_kept_trace_the_database_already_has_is_not_written_twice(tmp_path: Path) -> None:
    path, lost = tmp_path / "r.db", {}
    store = held_store(path, lost)
    set_pragma(store, "query_only=ON")
    trace_id = ids(7)[0]
    store.write([outcome(trace_id, row("a", False))], wait=5.0)
    assert store.settlement([trace_id])[0] == [trace_id]
    # Its commit went through after all (PostgreSQL's answer lost with the connection): the row is there.
    other = ResultStore(path, prune=False)
    other.write([outcome(trace_id, row("a", False))])
    other.close()
    set_pragma(store, "query_only=OFF")
    assert trace_id in settled_within(store, {trace_id})
    assert results_per_trace(path) == {trace_id: 1}
    store.close()


def test_past_max_kept_traces_the_rest_are_dropped_counted_and_settled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(writer, "MAX_KEPT_TRACES", 5)
    path, lost = tmp_path / "r.db", {}
    store = held_store(path, lost)
    set_pragma(store, "query_only=ON")
    traces = ids(*range(1, 13))
    for trace_id in traces:
        store.write([outcome(trace_id, row("a", False), row("b", True))], wait=5.0)
    waiting, settled = store.settlement(traces)
    assert len(waiting) == 5 and set(settled) == set(traces) - set(waiting)  # dropped: lost for good, settled
    assert lost == {"queue_full": 2 * 7}  # per result: two per trace dropped
    set_pragma(store, "query_only=OFF")
    assert settled_within(store, set(waiting)) == set(waiting)
    assert results_per_trace(path) == dict.fromkeys(waiting, 1)  # the failing result of each kept trace
    store.close()


def test_without_hold_unwritten_a_refused_write_is_lost_and_counted(tmp_path: Path) -> None:
    """The default (the intake log off): rows the database refuses are dropped, as before."""
    path, lost = tmp_path / "r.db", {}
    seen = Recorded()
    health = seen.health()
    health._on_lost = lambda reason, n: lost.__setitem__(reason, lost.get(reason, 0) + n)
    store = ResultStore(path, prune=False, health=health)
    store.start_writer()
    set_pragma(store, "query_only=ON")
    store.write([outcome(ids(1)[0], row("a", False))], wait=5.0)
    assert lost == {"failed": 1}
    set_pragma(store, "query_only=OFF")
    store.flush(5.0)
    assert results_per_trace(path) == {}
    store.close()
