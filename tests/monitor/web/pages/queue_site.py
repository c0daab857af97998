"""The review queue served as the daemon serves it: a real SQLite result store holding scripted results, its
review reader, the queue over it, `ReviewWriter` writing to it, and the metrics port's app on 127.0.0.1."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from monitor.config.review import QueueConfig, ReviewConfig
from monitor.outcomes import ResultRow
from monitor.review.queue import QueueEvaluator, ReviewQueue
from monitor.review.sqlite_reader import SQLiteReviewReader
from monitor.store.reviews import ResultKey
from monitor.store.sqlite import ResultStore
from monitor.web.app import build_api_app
from monitor.web.review_writer import ReviewWriter
from tests.support.metrics_port import serve
from tests.support.store_builders import outcome

TOKEN = "queue-token-s3cret"
NOW = time.time()
T1, T2, T3 = "a1" * 16, "b2" * 16, "c3" * 16
EVALUATORS = [QueueEvaluator("faithful", judge=True, threshold=0.7), QueueEvaluator("polite")]
# every result sampled (share 1), newest first: T1's failing faithful, T2's passing polite, T3's passing faithful
CONFIG = QueueConfig.model_validate({"sample": {"share": 1.0, "evaluators": "all"}})
ORDER = [ResultKey(T1, "faithful", "trace"), ResultKey(T2, "polite", "trace"), ResultKey(T3, "faithful", "trace")]
EXPLANATION = "made up a refund policy"


def _row(evaluator: str, score: float, passed: bool, explanation: str) -> ResultRow:
    return ResultRow(None, None, None, evaluator, "trace", score, passed, None, explanation, None, 0.0)


@dataclass
class QueueSite:
    base: str
    store: ResultStore
    reader: SQLiteReviewReader


@contextmanager
def queue_site(path: Path, token: str | None = TOKEN, with_queue: bool = True) -> Iterator[QueueSite]:
    store = ResultStore(path, results="all")
    store.write(
        [
            outcome(T1, _row("faithful", 0.2, False, EXPLANATION), given="can I get a refund?", answer="yes, 90 days"),
            outcome(T2, _row("polite", 1.0, True, "polite enough"), given="hello", answer="hi there"),
            outcome(T3, _row("faithful", 0.9, True, "grounded"), given="order status?", answer="shipped"),
        ]
    )
    for trace, age in ((T1, 100), (T2, 200), (T3, 300)):
        for table in ("traces", "results"):
            sql = f"UPDATE {table} SET created_at = ? WHERE trace_id = ?"
            store.transaction(lambda db, sql=sql, t=trace, a=age: db.execute(sql, (NOW - a, t)))
    reader = SQLiteReviewReader(path)
    queue = ReviewQueue(reader, CONFIG, EVALUATORS) if with_queue else None
    app = build_api_app(
        lambda accept: (b"# metrics\n", "text/plain"),
        lambda: {"ok": True},
        token,
        reader=reader,
        evaluators_info=["faithful", "polite"],
        review=ReviewConfig(queue=CONFIG),
        queue=queue,
        reviewing=ReviewWriter(store),
    )
    try:
        with serve(app) as base:
            yield QueueSite(base, store, reader)
    finally:
        reader.close()
        store.close()
