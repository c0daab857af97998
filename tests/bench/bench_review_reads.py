"""Benchmark: the review's reads of a SQLite result store of about 50,000 results (issue 40: the review's SQL
written with SQLAlchemy Core must not be slower than the hand-written SQL was).

The store: TRACES traces over a week, 5 results each (3 passing ones packed in the trace, a failing one and a
skip as `results` rows; a third of the failures with one of 20 signatures), 3 services, 2 variants. Timed, each
the median of REPEATS in milliseconds: a results page newest first with a filter (and its next page by the
cursor), the same for the failing results of one evaluator, breakdowns by agent, by tool and by service, the
signatures page (counts and trends). CPU time of the read through `SQLiteReviewReader` (connection
reused, as the daemon's reader does), not wall time, because the benches share the host.

    python -m tests.bench.bench_review_reads [--store FILE] [--build FILE] [--repeats N]

`--build FILE` writes the store there and exits; `--store FILE` times an existing one (an A/B comparison of two
source trees times one store with each tree alternately).
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from monitor.review.models import ResultFilter
from monitor.review.signature_models import SignatureFilter
from monitor.review.sqlite_reader import SQLiteReviewReader
from monitor.store.sqlite import ResultStore
from tests.support.store_builders import detail, outcome, row

TRACES = 10_000
REPEATS = 30
WEEK = 7 * 86400.0
SERVICES = ("shop", "search", "billing")


def build(path: Path) -> None:
    """The store at `path` (5 results per trace), its times spread over the week before now."""
    store = ResultStore(str(path))
    batch = []
    for n in range(TRACES):
        rows = (
            row("error_free", True, agent="planner"),
            row("latency", True, model="gpt-4o"),
            row("tool_success_rate", True),
            row("answer_relevance" if n % 3 else "hallucination", False, agent="writer" if n % 2 else None),
            row("judge", None, "judge_unavailable"),
        )
        models = ("gpt-4o", "gpt-4o-mini") if n % 2 else ("gpt-4o",)
        shape = detail(("planner", "writer"), models, ("search", "calc") if n % 4 else ("search",))
        service, variant = SERVICES[n % 3], "canary" if n % 5 == 0 else ""
        batch.append(outcome(f"{n:032x}", *rows, service=service, detail=shape, variant=variant))
        if len(batch) == 1000:
            store.write(batch)
            batch = []
    store.write(batch)
    store.close()
    now = time.time()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE traces SET created_at = ? - rowid * ?", (now, WEEK / TRACES))
        db.execute(
            "UPDATE results SET created_at = (SELECT t.created_at FROM traces t WHERE t.trace_id = results.trace_id)"
        )
        db.execute("UPDATE results SET signature = 'sig' || (id % 20) WHERE passed = 0 AND id % 3 = 0")
        db.executemany(
            "INSERT OR REPLACE INTO signatures VALUES (?, '1', 'answer_relevance', 'trace', '', 'llm', 'chat', 'E',"
            " 'template', 'example', ?, ?, 100, '[]', '[]', '[]', '[]', '[]', '[]', NULL)",
            [(f"sig{i}", now - WEEK, now) for i in range(20)],
        )


def median_ms(work: Callable[[], object], repeats: int) -> float:
    work()
    times = []
    for _ in range(repeats):
        started = time.process_time()
        work()
        times.append(time.process_time() - started)
    return 1000 * statistics.median(times)


def reads(reader: SQLiteReviewReader) -> dict[str, Callable[[], object]]:
    now = time.time()
    shop = ResultFilter(service="shop")
    second = reader.results(shop, 50).next_cursor
    failing = ResultFilter(evaluator="answer_relevance", outcome="fail")
    week = SignatureFilter(since=now - WEEK, until=now)
    return {
        "results, service filter, page 1": lambda: reader.results(shop, 50),
        "results, service filter, page 2": lambda: reader.results(shop, 50, second),
        "results, variant canary": lambda: reader.results(ResultFilter(variant="canary"), 50),
        "results, one evaluator failing": lambda: reader.results(failing, 50),
        "breakdown by agent": lambda: reader.breakdown("agent"),
        "breakdown by tool, one day": lambda: reader.breakdown("tool", since=now - 86400.0),
        "signatures page (trends)": lambda: reader.signatures(week, 20, None, now, 86400.0),
        "breakdown by service, canary": lambda: reader.breakdown("service", variant="canary"),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--store", type=Path)
    parser.add_argument("--build", type=Path)
    parser.add_argument("--repeats", type=int, default=REPEATS)
    args = parser.parse_args()
    if args.build is not None:
        build(args.build)
        return
    with tempfile.TemporaryDirectory() as directory:
        path = args.store
        if path is None:
            path = Path(directory) / "r.db"
            build(path)
        reader = SQLiteReviewReader(path)
        for name, work in reads(reader).items():
            print(f"  {name:34} {median_ms(work, args.repeats):8.2f} ms", flush=True)
        reader.close()


if __name__ == "__main__":
    sys.exit(main())
