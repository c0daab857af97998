"""Bench: the result store's writes, this tree against a baseline commit's (issue 40 item 1: the store's SQL in
SQLAlchemy Core may cost at most 5 % of the write speed), the same synthetic evaluated traces, alternating.

Each run is a fresh interpreter (this one, its dependencies) importing `monitor` from one tree (PYTHONPATH: this
tree, or the baseline's, extracted with `git archive` into .cache/bench-baseline/<sha>/src; baseline_tree.py) that
writes BENCH_STORE_TRACES evaluated traces (default 20,000) through the store's own write path, BENCH_STORE_BATCH
per write (default 100: one transaction each, as a worker process writes them), into a fresh SQLite file and, when
a PostgreSQL server can be started (tests/pgserver.py; BENCH_STORE_POSTGRES=0: not), a fresh database. Each trace:
4 results (`results: all`: the passing ones packed into the trace's row), a step tree of 7 steps, 10 % with a
failing result whose failure signature is one of 50, 5 % with a skip. The traces are built before the clock starts.

BENCH_STORE_ROUNDS rounds (default 5: a shared host's speed moves a lot from one run to the next), each running
the baseline, then this tree, on each database: a drift of the host's speed hits both. Printed per run and as
medians with the ratios current / baseline: traces written per second (wall) and CPU ms per trace (the process's,
every thread). Figures, not targets: exits 0 unless a run broke (or the baseline cannot be had).

    python -m tests.bench.bench_store_writes
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from statistics import median

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.bench.baseline_tree import CACHE, ROOT, BaselineError, extract, imported_from, resolve

REF = os.environ.get("BENCH_BASELINE_REF", "6c02950")  # main before the write side's SQL moved into Core
TRACES = int(os.environ.get("BENCH_STORE_TRACES", "20000"))
BATCH = int(os.environ.get("BENCH_STORE_BATCH", "100"))
ROUNDS = int(os.environ.get("BENCH_STORE_ROUNDS", "5"))
POSTGRES = os.environ.get("BENCH_STORE_POSTGRES", "1") != "0"
RUN_TIMEOUT = 1800.0

# Runs in the side's interpreter with `monitor` from the side's tree: only what both trees have.
WORKER = r"""
import json, sys, time
from evaluators.signatures import FailureSignature
from monitor.outcomes import ResultRow, TraceDetailRow, TraceOutcome

kind, where, count, batch = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
words = "the order was refunded after the customer asked twice about the delayed parcel to Lisbon".split()
text = lambda n, k: " ".join(words[(n + i) % len(words)] for i in range(k))
signatures = [FailureSignature(f"{s:016x}", "2", "tool_ok", "agent", "support", "tool", "lookup_order", "HTTPError",
              f"HTTP 503 from orders-api <n> ({s})", f"HTTP 503 from orders-api 17 ({s})") for s in range(50)]
steps = tuple((f"{s:016x}", None if s == 0 else f"{0:016x}", min(s, 1), ("agent", "llm", "tool")[s % 3],
               f"step {s}", 10.0 * s, 50.0, None, "gpt-4o" if s % 3 == 1 else None, 120, 40, text(s, 12),
               0.001, "price_table") for s in range(7))
detail = TraceDetailRow(("support",), (("gpt-4o", 3, 360, 120, 0.003, 0),), ("lookup_order",), (), steps, False,
                        0.003, 0, (("support", 3, 0.003, 0),), "first_user_message")

def outcome(n):
    failing = n % 10 == 0
    results = (
        ResultRow(None, None, None, "faithful", "trace", None if n % 20 == 5 else 0.9, None if n % 20 == 5 else True,
                  "error" if n % 20 == 5 else None, text(n, 20), '{"k": 1}', 0.001),
        ResultRow(None, None, None, "polite", "trace", 1.0, True, None, None, None, 0.001),
        ResultRow(f"{1:016x}", "support", "gpt-4o", "json_valid", "llm", 1.0, True, None, None, None, 0.001),
        ResultRow(None, "support", None, "tool_ok", "agent", 0.0 if failing else 1.0, not failing, None,
                  text(n, 30) if failing else None, '{"tool": "lookup_order"}' if failing else None, 0.001,
                  signatures[n % 50] if failing else None),
    )
    return TraceOutcome(f"{n:032x}", f"svc-{n % 5}", 1.2, failing, (), (("lookup_order", not failing),),
                        text(n, 40), text(n + 3, 60), 7, 1200.0, 0.0, results, (), detail, "v1" if n % 2 else "")

outcomes = [outcome(n) for n in range(count)]
if kind == "sqlite":
    from monitor.store.sqlite import ResultStore
    store = ResultStore(where, results="all", prune=False)
else:
    from monitor.store.postgres.store import PostgresResultStore
    store = PostgresResultStore(where, results="all", prune=False)
store.write(outcomes[:batch])  # the schema, the first statements compiled: before the clock
wall, cpu = time.perf_counter(), time.process_time()
for start in range(batch, count, batch):
    store.write(outcomes[start:start + batch])
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
stored, errors = store.count("traces"), store.write_errors
store.close()
print(json.dumps({"written": count - batch, "stored": stored, "errors": errors, "wall": wall, "cpu": cpu}))
"""


class Broken(Exception):
    """A run failed or wrote less than it was given."""


@dataclass(frozen=True)
class Figures:
    traces_per_second: float
    cpu_ms_per_trace: float


@dataclass(frozen=True)
class Side:
    label: str
    tree: Path

    def env(self) -> dict[str, str]:
        return {**os.environ, "PYTHONPATH": str(self.tree)}

    def check(self) -> None:
        with tempfile.TemporaryDirectory(prefix="bench-store-") as tmp:
            found = imported_from(sys.executable, self.env(), Path(tmp))
        if found != self.tree.resolve():
            raise Broken(f"{self.label}: {sys.executable} imports monitor from {found}, not {self.tree}")

    def run(self, kind: str, where: str) -> Figures:
        with tempfile.TemporaryDirectory(prefix="bench-store-") as tmp:
            command = [sys.executable, "-c", WORKER, kind, where, str(TRACES), str(BATCH)]
            done = subprocess.run(command, cwd=tmp, env=self.env(), capture_output=True, text=True,
                                  timeout=RUN_TIMEOUT, check=False)  # fmt: skip
        if done.returncode != 0:
            raise Broken(f"{self.label} on {kind} exited {done.returncode}:\n{done.stderr[-3000:]}")
        got = json.loads(done.stdout.strip().splitlines()[-1])
        if got["errors"] or got["stored"] != TRACES:
            raise Broken(f"{self.label} on {kind} stored {got['stored']} of {TRACES} traces ({got['errors']} errors)")
        return Figures(got["written"] / got["wall"], 1000 * got["cpu"] / got["written"])


def baseline_tree(ref: str) -> Path:
    """The baseline commit's tree, extracted once under the cache (run with this interpreter: no venv of its own)."""
    sha = resolve(ref)
    src = CACHE / sha / "src"
    extract(sha, src)
    return src


@contextlib.contextmanager
def databases() -> Iterator[list[tuple[str, object]]]:
    """("sqlite", None) and, when a server starts, ("postgres", the server: a new database per run)."""
    if not POSTGRES:
        yield [("sqlite", None)]
        return
    from tests.support.pgserver import PostgresServer

    try:
        server = PostgresServer().start()
    except Exception as exc:  # no PostgreSQL binaries here
        print(f"  no PostgreSQL server ({type(exc).__name__}: {exc}): SQLite only", flush=True)
        yield [("sqlite", None)]
        return
    try:
        yield [("sqlite", None), ("postgres", server)]
    finally:
        server.stop()


def location(kind: str, server: object, tmp: Path, run: str) -> str:
    """A fresh database for one run: a new file, or a new database on the server."""
    if kind == "sqlite":
        return str(tmp / f"{run}.db")
    return server.new_database()  # type: ignore[attr-defined]


def line(label: str, figures: Figures) -> str:
    return f"    {label:<28}{figures.traces_per_second:>9,.0f} traces/s  {figures.cpu_ms_per_trace:7.3f} CPU ms/trace"


def middle(runs: list[Figures]) -> Figures:
    return Figures(median(f.traces_per_second for f in runs), median(f.cpu_ms_per_trace for f in runs))


def summary(kind: str, base: Figures, cur: Figures, rounds: int) -> list[str]:
    """The medians of both sides on one database and their ratios current / baseline."""
    speed, cpu = cur.traces_per_second / base.traces_per_second, cur.cpu_ms_per_trace / base.cpu_ms_per_trace
    rows = [("traces written per second", f"{base.traces_per_second:,.0f}", f"{cur.traces_per_second:,.0f}", speed),
            ("CPU ms per trace", f"{base.cpu_ms_per_trace:.3f}", f"{cur.cpu_ms_per_trace:.3f}", cpu)]  # fmt: skip
    lines = [f"  {kind + ': medians of ' + str(rounds) + ' rounds':<34}{'baseline':>12}{'current':>12}{'ratio':>10}"]
    lines += [f"    {name:<30}{b:>12}{c:>12}{r:>9.3f}x" for name, b, c, r in rows]
    lines.append(f"    write speed {speed:.3f}x the baseline's, CPU per trace {cpu:.3f}x (target: speed >= 0.95x)")
    return lines


def main() -> int:
    try:
        baseline = Side(f"baseline {REF}", baseline_tree(REF))
    except BaselineError as exc:
        print(f"bench_store_writes: NO BASELINE: {exc}", flush=True)
        return 1
    current = Side("current", ROOT)
    print(f"  {TRACES:,} traces, {BATCH} per write, {ROUNDS} rounds, baseline {REF} first", flush=True)
    try:
        for side in (baseline, current):
            side.check()
        with databases() as kinds, tempfile.TemporaryDirectory(prefix="bench-store-") as tmp:
            runs: dict[str, dict[str, list[Figures]]] = {
                kind: {baseline.label: [], current.label: []} for kind, _ in kinds
            }
            for number in range(1, ROUNDS + 1):
                print(f"  round {number}/{ROUNDS}", flush=True)
                for kind, server in kinds:
                    for side in (baseline, current):
                        where = location(kind, server, Path(tmp), f"{number}-{side.tree.name}-{side is current}")
                        figures = side.run(kind, where)
                        runs[kind][side.label].append(figures)
                        print(line(f"{kind} {side.label}", figures), flush=True)
    except (Broken, BaselineError, subprocess.TimeoutExpired) as exc:
        print(f"bench_store_writes: BROKEN: {exc}", flush=True)
        return 1
    for kind, by_side in runs.items():
        for text in summary(kind, middle(by_side[baseline.label]), middle(by_side[current.label]), ROUNDS):
            print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
