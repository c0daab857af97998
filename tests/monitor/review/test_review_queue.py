"""The review queue's selection (monitor/review/queue.py over the reader's queue reads) on SQLite and on a real
PostgreSQL: scripted results in the store, the rules of `review.queue`, and the picks expected in order — the
alerting evaluator's failures, the first results of a new failure signature, results near their threshold, then
the judges' sample — each reviewed in turn until the queue is empty; skipped results are passed over; results
outside the window, skips, reviewed ones, a later result of the new signature, an old signature's and the
non-judges' are never offered; the progress counts today's reviews and each rule's backlog."""

from __future__ import annotations

import time

from monitor.config.review import QueueConfig
from monitor.outcomes import ResultRow
from monitor.review.queue import QueueEvaluator, QueueItem, ReviewQueue
from monitor.review.queue_sql import sampled_in, share_bound
from monitor.store.reviews import ResultKey, ReviewInput, write_review
from monitor.store.writer import QueuedResultStore
from tests.support.backends import Backend
from tests.support.signature_rows import Sig, insert_signature
from tests.support.store_builders import outcome

NOW = time.time()
IN, OUT = "00000001", "ffffffff"  # trace id tails sampled in and out at 10%
EVALUATORS = [
    QueueEvaluator("judge_a", judge=True, threshold=0.7),
    QueueEvaluator("rule_b", threshold=0.5),
    QueueEvaluator("rule_c"),
]


def tid(n: int, tail: str = OUT) -> str:
    return f"{n:024x}{tail}"


def result(evaluator: str, score: float | None, passed: bool | None, span_id: str | None = None) -> ResultRow:
    skip = "no_input" if passed is None else None
    level = "llm" if span_id else "trace"
    return ResultRow(span_id, None, None, evaluator, level, score, passed, skip, f"{evaluator} said so", None, 0.0)


# (trace, age in seconds, results): the scripted store
SCRIPT = [
    (tid(1), 100, [result("rule_c", 0.0, False), result("rule_c", 1.0, True)]),
    (tid(2), 700, [result("rule_b", 0.0, False)]),  # new signature S, 1st
    (tid(3), 600, [result("rule_b", 0.0, False)]),  # 2nd
    (tid(4), 500, [result("rule_b", 0.0, False)]),  # 3rd
    (tid(5), 400, [result("rule_b", 0.0, False)]),  # 4th: past `first`
    (tid(6), 300, [result("rule_b", 0.0, False)]),  # an old signature's
    (tid(7), 250, [result("judge_a", 0.75, True), result("judge_a", 0.2, False, "s9")]),  # near (passing), far
    (tid(8), 350, [result("judge_a", 0.65, False)]),  # near (failing)
    (tid(9, IN), 200, [result("judge_a", 1.0, True, "s1"), result("rule_b", 1.0, True)]),  # sampled (passing)
    (tid(10, IN), 150, [result("judge_a", 0.0, False), result("judge_a", None, None, "s2")]),  # sampled, a skip
    (tid(11), 120, [result("judge_a", 1.0, True)]),  # sampled out
    (tid(12, IN), 8 * 86400, [result("judge_a", 0.0, False)]),  # outside the window
]
EXPECTED = [
    ("alerting", ResultKey(tid(1), "rule_c", "trace")),
    ("new_signature", ResultKey(tid(4), "rule_b", "trace")),
    ("new_signature", ResultKey(tid(3), "rule_b", "trace")),
    ("new_signature", ResultKey(tid(2), "rule_b", "trace")),
    ("near_threshold", ResultKey(tid(7), "judge_a", "trace")),
    ("near_threshold", ResultKey(tid(8), "judge_a", "trace")),
    ("sample", ResultKey(tid(10, IN), "judge_a", "trace")),
    ("sample", ResultKey(tid(9, IN), "judge_a", "llm", "s1")),
]


def scripted(backend: Backend) -> QueuedResultStore:
    store = backend.store(results="all")
    store.write([outcome(trace, *rows) for trace, _, rows in SCRIPT])
    for trace, age, _ in SCRIPT:
        backend.execute("UPDATE results SET created_at = ? WHERE trace_id = ?", (NOW - age, trace))
        backend.execute("UPDATE traces SET created_at = ? WHERE trace_id = ?", (NOW - age, trace))
    insert_signature(backend, Sig("a" * 16, evaluator="rule_b", first_seen=NOW - 3600, last_seen=NOW - 400))
    insert_signature(backend, Sig("b" * 16, evaluator="rule_b", first_seen=NOW - 3 * 86400, last_seen=NOW - 300))
    for n in (2, 3, 4, 5):
        backend.execute("UPDATE results SET signature = ? WHERE trace_id = ?", ("a" * 16, tid(n)))
    backend.execute("UPDATE results SET signature = ? WHERE trace_id = ?", ("b" * 16, tid(6)))
    return store


RULES_ALONE = QueueConfig(per_evaluator_target=0)  # no spreading: the rules' order (test_review_queue_spread.py)


def queue_of(backend: Backend, firing: tuple[str, ...] = ("rule_c",)) -> tuple[ReviewQueue, object]:
    reader = backend.reader()
    return ReviewQueue(reader, RULES_ALONE, EVALUATORS, lambda: firing, clock=lambda: NOW), reader  # type: ignore[arg-type]


def test_the_sample_is_decided_by_the_trace_ids_tail() -> None:
    assert share_bound(0.1) == "19999999" and sampled_in(tid(1, IN), 0.1) and not sampled_in(tid(1, OUT), 0.1)
    assert sampled_in(tid(1, OUT), 1.0) and not sampled_in(tid(1, IN), 0.0)


def test_the_rules_pick_in_priority_order_newest_first_until_all_are_reviewed(backend: Backend) -> None:
    store = scripted(backend)
    queue, reader = queue_of(backend)
    try:
        progress = queue.progress("ann")
        assert [(b.rule, b.results, b.more) for b in progress.backlog] == [
            ("alerting", 1, False),
            ("new_signature", 3, False),
            ("near_threshold", 2, False),
            ("sample", 2, False),
        ]
        assert (progress.mine_today, progress.all_today) == (0, 0)
        picks: list[tuple[str, ResultKey]] = []
        for n in range(len(EXPECTED) + 1):
            item = queue.next("ann")
            if item is None:
                break
            picks.append((item.rule, item.key))
            reviewer = "ann" if n % 2 == 0 else "bob"
            review = ReviewInput(item.key, "agree", reviewer)
            store.transaction(lambda db, review=review: write_review(db, review, NOW))
        assert picks == EXPECTED
        progress = queue.progress("ann")
        assert [b.results for b in progress.backlog] == [0, 0, 0, 0]
        assert (progress.mine_today, progress.all_today) == (4, 8)
    finally:
        reader.close()  # type: ignore[attr-defined]
        store.close()


def test_an_item_says_what_the_page_shows(backend: Backend) -> None:
    store = scripted(backend)
    queue, reader = queue_of(backend, firing=())
    try:
        item = queue.next(None)
        assert isinstance(item, QueueItem)
        assert (item.rule, item.key, item.passed, item.score) == ("new_signature", EXPECTED[1][1], False, 0.0)
        assert item.signature == "a" * 16 and item.explanation == "rule_b said so" and item.service == "svc"
        assert item.evaluated_at == NOW - 500 and "failure signature" in item.reason
        skipped = {EXPECTED[1][1], EXPECTED[2][1], EXPECTED[3][1]}
        near = queue.next(None, skipped)
        assert near is not None and (near.rule, near.key, near.passed, near.score) == (
            "near_threshold", EXPECTED[4][1], True, 0.75)  # fmt: skip
        assert near.threshold == 0.7 and "0.7" in near.reason
        backlog = queue.progress(None).backlog
        assert [b.rule for b in backlog] == ["alerting", "new_signature", "near_threshold", "sample"]
        assert backlog[0].results == 0  # no alert firing
    finally:
        reader.close()  # type: ignore[attr-defined]
        store.close()


def test_skipped_results_are_passed_over_and_priorities_and_rules_follow_the_config(backend: Backend) -> None:
    store = scripted(backend)
    reader = backend.reader()
    try:
        config = QueueConfig.model_validate(
            {
                "alerting": {"enabled": False},
                "new_signature": {"priority": 1, "first": 1},
                "near_threshold": {"enabled": False},
                "sample": {"priority": 5, "share": 1.0, "evaluators": ["rule_b"]},
            }
        )
        queue = ReviewQueue(reader, config, EVALUATORS, clock=lambda: NOW)  # type: ignore[arg-type]
        first = queue.next("ann")
        # rule_b's results, all of them, newest first: tid 9's passing one (200 s ago), then its failures
        assert first is not None and (first.rule, first.key) == ("sample", ResultKey(tid(9, IN), "rule_b", "trace"))
        skipped = {first.key}
        picks = []
        for _ in range(10):
            item = queue.next("ann", skipped)
            if item is None:
                break
            picks.append((item.rule, item.key.trace_id))
            skipped.add(item.key)
        assert picks == [("sample", tid(n)) for n in (6, 5, 4, 3, 2)]
        assert queue.next("bob") == first  # another reviewer's skips are not this one's
    finally:
        reader.close()  # type: ignore[attr-defined]
        store.close()
