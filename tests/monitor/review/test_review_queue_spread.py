"""The review queue spreads reviews over the evaluators (review.queue.per_evaluator_target), on SQLite and on a
real PostgreSQL: two evaluators alerting with plenty of failures and an LLM judge with sampled results; the picks go
round the three, the fewest reviews first and a firing evaluator first among equals, until each has the target;
then the rules alone (the alerting failures first) decide again. An evaluator without results to offer is passed
over; a skipped result hands the turn on; reviews of skips, superseded reviews and reviews made before the window
do not count; the reason says why each result came."""

from __future__ import annotations

import time

from monitor.config.review import MIN_REVIEWS, QueueConfig
from monitor.outcomes import ResultRow
from monitor.review import calibration
from monitor.review.queue import QueueEvaluator, ReviewQueue
from monitor.store.reviews import ResultKey, ReviewInput, write_review
from monitor.store.writer import QueuedResultStore
from tests.support.backends import Backend
from tests.support.store_builders import outcome

NOW = time.time()
TARGET = 3
CONFIG = QueueConfig(per_evaluator_target=TARGET)
FIRING = ("rule_b", "rule_c")
EVALUATORS = [
    QueueEvaluator("judge_a", judge=True, threshold=0.7),
    QueueEvaluator("rule_b", threshold=0.5),
    QueueEvaluator("rule_c"),
    QueueEvaluator("rule_d"),  # nothing of it to review
]
TRACES = 12


def tid(n: int) -> str:
    return f"{n:024x}00000001"  # a tail sampled in at 10%


def _row(evaluator: str, score: float, passed: bool) -> ResultRow:
    return ResultRow(None, None, None, evaluator, "trace", score, passed, None, f"{evaluator} said so", None, 0.0)


def scripted(backend: Backend) -> QueuedResultStore:
    """Trace n (n * 100 s old): rule_b fails on the odd ones, rule_c on the even ones, judge_a passes on all at
    0.9 (not near its threshold: only the sample takes it), rule_d passes on all."""
    store = backend.store(results="all")
    store.write(
        [
            outcome(
                tid(n),
                _row("rule_b" if n % 2 else "rule_c", 0.0, False),
                _row("judge_a", 0.9, True),
                _row("rule_d", 1.0, True),
            )
            for n in range(1, TRACES + 1)
        ]
    )
    for n in range(1, TRACES + 1):
        for table in ("results", "traces"):
            backend.execute(f"UPDATE {table} SET created_at = ? WHERE trace_id = ?", (NOW - 100 * n, tid(n)))
    return store


def queue_of(reader: object, config: QueueConfig = CONFIG) -> ReviewQueue:
    return ReviewQueue(reader, config, EVALUATORS, lambda: FIRING, clock=lambda: NOW)  # type: ignore[arg-type]


def review(store: QueuedResultStore, key: ResultKey, at: float = NOW, agreement: str = "agree") -> None:
    store.transaction(lambda db: write_review(db, ReviewInput(key, agreement, "ann"), at))


def B(n: int) -> ResultKey:
    return ResultKey(tid(n), "rule_b", "trace")


def C(n: int) -> ResultKey:
    return ResultKey(tid(n), "rule_c", "trace")


def J(n: int) -> ResultKey:
    return ResultKey(tid(n), "judge_a", "trace")


def test_the_target_is_calibrates_minimum() -> None:
    assert QueueConfig().per_evaluator_target == MIN_REVIEWS == calibration.MIN_REVIEWS == 20


def test_reviews_go_round_the_evaluators_until_each_has_the_target(backend: Backend) -> None:
    store = scripted(backend)
    reader = backend.reader()
    queue = queue_of(reader)
    try:
        picks = []
        for _ in range(TRACES + 6):
            item = queue.next("ann")
            assert item is not None
            picks.append((item.key, item.rule, item.turn))
            review(store, item.key)
        # three rounds: each firing evaluator's newest failure, then the judge's newest sampled result
        spread = [(k, rule, r) for r in range(TARGET) for k, rule in
                  ((B(2 * r + 1), "alerting"), (C(2 * r + 2), "alerting"), (J(r + 1), "sample"))]  # fmt: skip
        # then the rules alone: the alerting failures, newest first, the judge's sample after them
        alone = [(B(n) if n % 2 else C(n), "alerting", None) for n in range(2 * TARGET + 1, TRACES + 1)]
        assert picks == spread + alone + [(J(n), "sample", None) for n in range(TARGET + 1, TARGET + 4)]
        assert queue.store.queue_reviewed(["judge_a", "rule_b", "rule_c", "rule_d"], NOW - 86400, 100) == {
            "judge_a": TARGET + 3, "rule_b": TRACES // 2, "rule_c": TRACES // 2, "rule_d": 0}  # fmt: skip
    finally:
        reader.close()  # type: ignore[attr-defined]
        store.close()


def test_without_spreading_the_firing_evaluators_take_every_review(backend: Backend) -> None:
    store = scripted(backend)
    reader = backend.reader()
    queue = queue_of(reader, QueueConfig(per_evaluator_target=0))
    try:
        picks = []
        for _ in range(TRACES):
            item = queue.next("ann")
            assert item is not None and item.turn is None
            picks.append(item.key)
            review(store, item.key)
        assert picks == [B(n) if n % 2 else C(n) for n in range(1, TRACES + 1)]
    finally:
        reader.close()  # type: ignore[attr-defined]
        store.close()


def test_what_counts_towards_the_target_and_the_reason_shown(backend: Backend) -> None:
    store = scripted(backend)
    reader = backend.reader()
    queue = queue_of(reader)
    try:
        first = queue.next("ann")
        assert first is not None and (first.key, first.turn) == (B(1), 0)
        assert first.reason == (
            "rule_b's alert is firing: its failing results come first among evaluators with as few reviews; reviews "
            "go round the evaluators: rule_b has 0 of the 3 reviews wanted per evaluator in the last 7d, and no "
            "other evaluator with results to review has fewer"
        )
        # rule_b: reviews made before the window and a superseded one do not count; the one in force does
        review(store, B(3), at=NOW - 8 * 86400)
        review(store, B(5), at=NOW - 60)
        review(store, B(5), agreement="disagree")  # supersedes the one before: one review in force
        assert queue.store.queue_reviewed(["rule_b"], NOW - CONFIG.window, TARGET) == {"rule_b": 1}
        # rule_c is next (0 reviews); skipping all of it hands the turn to the judge, also at 0
        second = queue.next("ann")
        assert second is not None and (second.key, second.turn) == (C(2), 0)
        third = queue.next("ann", {C(n) for n in range(2, TRACES + 1, 2)})
        assert third is not None and (third.key, third.rule, third.turn) == (J(1), "sample", 0)
        assert third.reason.startswith("a 10% sample of judge_a's results; reviews go round the evaluators")
        # a review of the judge's skip does not count (there is nothing to calibrate in it)
        skip = ResultRow(None, None, None, "judge_a", "agent", None, None, "no_input", None, None, 0.0)
        store.write([outcome("ee" * 16, skip)])
        review(store, ResultKey("ee" * 16, "judge_a", "agent"))
        assert queue.store.queue_reviewed(["judge_a"], NOW - CONFIG.window, TARGET) == {"judge_a": 0}
        # each has its target: the rules alone, and the reason says nothing of turns
        for key in (B(7), B(9), C(2), C(4), C(6), J(1), J(2), J(3)):
            review(store, key)
        alone = queue.next("ann")
        assert alone is not None and (alone.key, alone.turn) == (B(1), None)
        assert alone.reason == "rule_b's alert is firing: its failing results come first"
    finally:
        reader.close()  # type: ignore[attr-defined]
        store.close()
