"""The PostgreSQL side of bench_scaling.py: what a write adds to each table, the server's CPU, and concurrent writer
processes, each like an evaluation worker's store (one connection, one transaction per batch).

The writers are forked from a fork server (multiprocessing's `forkserver`: one single-threaded process that has
imported this module, so that starting 16 of them does not cost 16 interpreters' imports). They write rows packed
before the clock starts (`FreshIds`: a template of packed evaluated traces, given new trace ids batch by batch, so
every trace is inserted, none replaces one), through the store's own write (`open_result_store`, then
`write_packed` in one `transaction`, as `PostgresResultStore._store` does): what they spend of their own is
psycopg's and the signatures' masking, not evaluation or packing.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from monitor.config.store import StoreConfig
from monitor.store.from_config import open_result_store
from monitor.store.health import StoreHealth
from monitor.store.packing import Packed, pack
from monitor.store.postgres.store import PostgresResultStore
from tests.bench.proctree import CLK_TCK, stat, tree

ID_FIELDS = ("traces", "results", "sightings", "signals", "tools")  # the Packed lists whose rows hold trace ids
START_TIMEOUT = 120.0  # writers connected and their batches ready


def open_store(url: str, results: str) -> PostgresResultStore:
    """The store an evaluation worker opens (`pool_size` 1, no retention), its writer thread not started: `write`
    inserts at once, on the caller's thread."""
    config = StoreConfig.model_validate({"url": url, "results": results})
    store = open_result_store(config, health=StoreHealth(quiet=True), prune=False, pool_size=1)
    assert isinstance(store, PostgresResultStore)
    return store


# --- what the tables hold -----------------------------------------------------------------------
@dataclass(frozen=True)
class Tables:
    """Rows and bytes (`pg_total_relation_size`: heap, TOAST, indexes) of every table, and the WAL position."""

    rows: dict[str, int]
    size: dict[str, int]
    wal_lsn: str

    @classmethod
    def read(cls, url: str) -> Tables:
        with psycopg.connect(url, autocommit=True) as db:
            names = [r[0] for r in db.execute("SELECT relname FROM pg_stat_user_tables ORDER BY relname")]
            rows = {n: int(db.execute(f'SELECT count(*) FROM "{n}"').fetchone()[0]) for n in names}  # type: ignore[index]
            size = {n: int(db.execute("SELECT pg_total_relation_size(%s)", (n,)).fetchone()[0]) for n in names}  # type: ignore[index]
            lsn = str(db.execute("SELECT pg_current_wal_lsn()").fetchone()[0])  # type: ignore[index]
        return cls(rows, size, lsn)


@dataclass(frozen=True)
class Added:
    """What a write added: rows and bytes per table (the tables it touched), and WAL bytes."""

    rows: dict[str, int]
    size: dict[str, int]
    wal: int

    @classmethod
    def between(cls, url: str, before: Tables, after: Tables) -> Added:
        touched = [n for n in after.rows if after.rows[n] != before.rows.get(n, 0)]
        with psycopg.connect(url, autocommit=True) as db:
            wal = db.execute("SELECT pg_wal_lsn_diff(%s, %s)", (after.wal_lsn, before.wal_lsn)).fetchone()[0]  # type: ignore[index]
        return cls(
            {n: after.rows[n] - before.rows.get(n, 0) for n in touched},
            {n: after.size[n] - before.size.get(n, 0) for n in touched},
            int(wal),
        )


def server_cpu(postmaster: int) -> float:
    """CPU seconds of the server so far: every process under the postmaster, and the backends that exited (their
    time is in the postmaster's cutime and cstime once reaped)."""
    live = sum(reading[1] for pid in tree(postmaster) if (reading := stat(pid)) is not None)
    try:
        fields = Path(f"/proc/{postmaster}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return live
    return live + (int(fields[13]) + int(fields[14])) / CLK_TCK  # fields 16 and 17: cutime, cstime


def other_load(seconds: float = 2.0) -> float:
    """Cores busy on the host over `seconds` while this process sleeps: the other work sharing it."""
    busy, total = host_busy()
    time.sleep(seconds)
    busy2, total2 = host_busy()
    return (busy2 - busy) / (total2 - total) * (os.cpu_count() or 1) if total2 > total else 0.0


def host_busy() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole host so far, from /proc/stat."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + values[4]  # idle, iowait
    return (sum(values[:8]) - idle) / CLK_TCK, sum(values[:8]) / CLK_TCK


# --- rows under new trace ids -------------------------------------------------------------------
class FreshIds:
    """The template's packed batches over and over, each time under new trace ids (a 32-hex-digit counter under
    `prefix`), so that every write inserts its traces."""

    def __init__(self, batches: Sequence[tuple[Packed, set[str]]], prefix: int) -> None:
        self.templates = [(packed, _id_slots(packed, ids)) for packed, ids in batches]
        self.prefix = prefix
        self.made = 0

    def next(self) -> Packed:
        template, slots = self.templates[self.made % len(self.templates)]
        renamed: dict[str, str] = {}

        def new_id(old: str) -> str:
            if old not in renamed:
                renamed[old] = f"{self.prefix:08x}{self.made * 4096 + len(renamed):024x}"
            return renamed[old]

        changes: dict[str, Any] = {}
        for name in ID_FIELDS:
            rows = getattr(template, name)
            made = [_with_ids(row, slots[name][i], new_id) for i, row in enumerate(rows)]
            changes[name] = made if isinstance(rows, list) else tuple(made)
        self.made += 1
        return template._replace(**changes)


def _id_slots(packed: Packed, ids: set[str]) -> dict[str, list[tuple[int, ...]]]:
    """For each row of each list holding trace ids, the positions of its fields that are one."""
    return {
        name: [tuple(i for i, value in enumerate(row) if isinstance(value, str) and value in ids) for row in rows]
        for name in ID_FIELDS
        for rows in [getattr(packed, name)]
    }


def _with_ids(row: tuple, slots: tuple[int, ...], new_id: Any) -> tuple:
    if not slots:
        return row
    values = list(row)
    for i in slots:
        values[i] = new_id(values[i])
    return type(row)._make(values) if hasattr(row, "_make") else tuple(values)


def packed_batches(outcomes: Sequence[Any], batch: int, failing_only: bool) -> list[tuple[Packed, set[str]]]:
    """The outcomes packed as the store packs them, `batch` per write, each with its trace ids."""
    now = time.time()
    return [
        (pack(outcomes[i : i + batch], now, failing_only), {o.trace_id for o in outcomes[i : i + batch]})
        for i in range(0, len(outcomes) - batch + 1, batch)
    ]


def write_one(store: PostgresResultStore, packed: Packed) -> None:
    """One batch in one transaction, as the store's writer does."""
    store.transaction(lambda db: store.write_packed(db, packed))


# --- concurrent writers -------------------------------------------------------------------------
@dataclass(frozen=True)
class WriterRun:
    traces: int
    seconds: float  # wall, from the start to its last commit
    cpu: float  # the writer's own CPU seconds


def _writer(url: str, results: str, batches: list, seconds: float, number: int, start: Any, out: Any) -> None:
    store = open_store(url, results)
    fresh = FreshIds(batches, prefix=(os.getpid() << 8 | number) & 0xFFFFFFFF)
    write_one(store, fresh.next())  # connected, the statements prepared: before the clock
    start.wait(START_TIMEOUT)
    wall, cpu, written = time.perf_counter(), time.process_time(), 0
    deadline = wall + seconds
    while time.perf_counter() < deadline:
        packed = fresh.next()
        write_one(store, packed)
        written += len(packed.signals)  # one signal row per evaluated trace, whatever `results`
    out.put(WriterRun(written, time.perf_counter() - wall, time.process_time() - cpu))
    store.close()


@dataclass(frozen=True)
class CeilingPoint:
    writers: int
    traces_per_second: float
    server_cpu_ms: float  # server CPU per trace written
    writer_cpu_ms: float  # the writers' own CPU per trace
    host_busy: float  # share of the host's CPU in use over the run (every process, other work included)
    other_cores: float  # cores busy with neither the server nor the writers (the host's other work, this process)
    traces: int

    @property
    def cpu_bound(self) -> float:
        """Traces/s of the host's cores over the CPU a trace's write takes (server's and writer's): the ceiling of
        this host with no other work, when the writes are CPU-bound."""
        return len(os.sched_getaffinity(0)) * 1000 / (self.server_cpu_ms + self.writer_cpu_ms)


def run_writers(url: str, postmaster: int, results: str, batches: list, writers: int, seconds: float) -> CeilingPoint:
    """`writers` processes writing to `url` for `seconds` at once; the total and the CPU it took."""
    ctx = multiprocessing.get_context("forkserver")  # one clean process, imported once, forked for each writer
    ctx.set_forkserver_preload([__name__])
    start, out = ctx.Barrier(writers + 1), ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(url, results, batches, seconds, n, start, out)) for n in range(writers)]
    for proc in procs:
        proc.start()
    start.wait(START_TIMEOUT)
    server, (busy, total), wall = server_cpu(postmaster), host_busy(), time.perf_counter()
    runs = [out.get(timeout=seconds + START_TIMEOUT) for _ in procs]
    server, wall = server_cpu(postmaster) - server, time.perf_counter() - wall
    busy_now, total_now = host_busy()
    busy, total = busy_now - busy, total_now - total
    for proc in procs:
        proc.join(30)
        if proc.exitcode != 0:
            raise RuntimeError(f"a writer process exited {proc.exitcode}")
    traces, own = sum(r.traces for r in runs), sum(r.cpu for r in runs)
    return CeilingPoint(
        writers,
        sum(r.traces / r.seconds for r in runs),
        1000 * server / traces,
        1000 * own / traces,
        busy / total if total else 0.0,
        max(0.0, busy - server - own) / wall,
        traces,
    )
