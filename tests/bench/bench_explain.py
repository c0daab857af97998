"""Bench: an explanation end to end (issue 42's "answers within 1 s over 100,000 stored traces, on the embedded
SQLite store and on PostgreSQL, on 2 cores"): `Explainer.explain` through the review reader, the read of the
range's `trace_signals` rows (codes, text, verdicts) and the contrast, at BENCH_EXPLAIN_SIZES traces (default
10,000 and 100,000) of 30 dimension values each (28 dimensions of 8 values, 2 tools of 10), an evaluator failing
at 3 % and at 60 % where `model=v0` and `tool=t0` both hold.

Printed per store and size, the median of REPEATS in milliseconds, wall and CPU (the daemon's process; a
PostgreSQL server's own CPU is not in it): the read alone (`explain_rows`, the baseline of this run) and the whole
explanation, and their ratio (what the masks and the contrast add to the read); and the top factor found. A
PostgreSQL server is started when its binaries are there (BENCH_EXPLAIN_POSTGRES=0: not). Figures, not targets:
exits 0 unless a run broke.

    python -m tests.bench.bench_explain
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np

from monitor.config.explain import ExplainConfig
from monitor.explain.model import ExplainQuery
from monitor.explain.service import Explainer
from monitor.review.open_reader import open_store_reader
from tests.bench.bench_store_writes import databases, location
from tests.support.drift_rows import SyntheticTrace, create_store, write_traces

SIZES = [int(n) for n in os.environ.get("BENCH_EXPLAIN_SIZES", "10000,100000").split(",")]
POSTGRES = os.environ.get("BENCH_EXPLAIN_POSTGRES", "1") != "0"
REPEATS = 5
EVALUATOR = "helpfulness"
START = 1_000_000.0


def traces(n: int) -> list[SyntheticTrace]:
    rng = np.random.default_rng(7)
    names = ["model", *(f"dim{d:02}" for d in range(27))]
    picked = rng.integers(0, 8, (n, len(names))).tolist()
    tools = rng.integers(0, 10, (n, 2)).tolist()
    out = []
    for i in range(n):
        pairs = [*((d, f"v{v}") for d, v in zip(names, picked[i], strict=True)), *(("tool", f"t{t}") for t in tools[i])]
        planted = picked[i][0] == 0 and 0 in tools[i]
        failed = rng.random() < (0.6 if planted else 0.03)
        out.append(SyntheticTrace(created_at=START + i * 0.01, service="shop", dimensions=tuple(dict.fromkeys(pairs)),
                                  verdicts=((EVALUATOR, not failed, None),)))  # fmt: skip
    return out


def median_ms(run: Callable[[], object]) -> tuple[float, float]:
    run()  # warm: scipy's import, the connection
    walls, cpus = [], []
    for _ in range(REPEATS):
        wall, cpu = time.perf_counter(), time.process_time()
        run()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls) * 1000, statistics.median(cpus) * 1000


def bench(kind: str, where: str, n: int) -> None:
    create_store(where)
    made = traces(n)
    for start in range(0, n, 20_000):
        write_traces(where, made[start : start + 20_000])
    reader = open_store_reader(where)
    explainer = Explainer(reader, ExplainConfig())  # type: ignore[arg-type]
    query = ExplainQuery(evaluator=EVALUATOR, since=START, until=START + n)
    params = {"marker": f"|{EVALUATOR}|", "with_verdict": 1}  # as the explanation reads them
    read_wall, read_cpu = median_ms(lambda: reader.explain_rows(START, START + n, params, 200_000))
    wall, cpu = median_ms(lambda: explainer.explain(query))
    found = explainer.explain(query)
    top = " AND ".join(f"{v.dimension}={v.value}" for v in found.factors[0].values) if found.factors else "none"
    print(f"  {kind:<10} {n:>7,} traces: read {read_wall:6.0f} ms wall {read_cpu:6.0f} ms CPU; explanation "
          f"{wall:6.0f} ms wall {cpu:6.0f} ms CPU ({wall / read_wall:.2f}× the read); {found.slice_traces} failures, "
          f"top factor {top}", flush=True)  # fmt: skip
    reader.close()


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp, databases() as stores:
        for kind, server in stores:
            if kind == "postgres" and not POSTGRES:
                continue
            for n in SIZES:
                bench(kind, location(kind, server, Path(tmp), f"explain{n}"), n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
