"""Reviewers' verdicts in the result store (monitor/store/reviews.py), on SQLite and on a real PostgreSQL: a
failing result (a `results` row) and a passing one (in its trace's `passed` list) can be reviewed, with the
evaluator's verdict and a snapshot of the trace kept; a changed review supersedes the one in force and both are
kept (the audit trail); a result the store does not hold cannot be reviewed; reviews outlive the trace's rows."""

from __future__ import annotations

import asyncio

import pytest

from monitor.outcomes import TraceDetailRow
from monitor.review.api_params import NotFound, Unavailable
from monitor.store.reviews import (
    ResultKey,
    ResultNotFound,
    ReviewInput,
    StoredReview,
    history,
    reviews_in_force,
    reviews_of_trace,
    write_review,
)
from monitor.web.review_writer import ReviewWriter
from tests.support.backends import Backend
from tests.support.store_builders import outcome, row

TRACE = "ab" * 16
STEPS = (
    ("s1", None, 0, "agent", "support", 0.0, 900.0, None, None, None, None, None, None, None),
    ("s2", "s1", 1, "llm", "chat gpt-4o", 0.0, 300.0, None, "gpt-4o", 10, 5, None, 0.002, "price_table"),
    ("s3", "s1", 1, "tool", "lookup_order", 300.0, 100.0, None, None, None, None, None, None, None),
    ("s4", "s1", 1, "tool", "refund", 400.0, 100.0, None, None, None, None, None, None, None),
)


def stored(backend: Backend):
    """A store holding one trace with a failing `faithful` result, a passing `polite` one and a passing
    llm-level `json_valid` one on span s2."""
    store = backend.store(results="all")
    detail = TraceDetailRow(("support",), (("gpt-4o", 1, 10, 5, 0.002, 0),), ("lookup_order", "refund"), (), STEPS,
                            False, 0.002, 0)  # fmt: skip
    store.write(
        [outcome(TRACE, row("faithful", False), row("polite", True), row("json_valid", True, level="llm", span_id="s2"),
                 given="where is my order?", answer="refunded", detail=detail)]
    )  # fmt: skip
    return store


def test_a_failing_and_a_passing_result_are_reviewed_with_the_verdict_and_a_snapshot(backend: Backend) -> None:
    store = stored(backend)
    false_alarm = ReviewInput(ResultKey(TRACE, "faithful", "trace"), "disagree", "ann", note="the answer is right")
    miss = ReviewInput(ResultKey(TRACE, "json_valid", "llm", "s2"), "disagree", "bob", corrected_score=0.0)
    first = store.transaction(lambda db: write_review(db, false_alarm, 100.0))
    second = store.transaction(lambda db: write_review(db, miss, 101.0))
    assert (first.verdict_passed, first.verdict_score, first.false_alarm, first.miss) == (False, 0.0, True, False)
    assert (second.verdict_passed, second.miss, second.corrected_score) == (True, True, 0.0)
    assert first.task is not None and first.task["input"] == "where is my order?" and first.task["output"] == "refunded"
    assert first.task["trajectory"] == ["lookup_order", "refund"] and first.task["duration_ms"] == 1000.0
    assert first.task["cost_usd"] == 0.002 and first.task["models"] == ["gpt-4o"]

    in_force = store.transaction(lambda db: reviews_of_trace(db, TRACE))
    assert [(r.evaluator, r.reviewer, r.agreement, r.note) for r in in_force] == [
        ("faithful", "ann", "disagree", "the answer is right"),
        ("json_valid", "bob", "disagree", None),
    ]
    store.close()


def test_a_changed_review_supersedes_the_one_in_force_and_both_are_kept(backend: Backend) -> None:
    store = stored(backend)
    key = ResultKey(TRACE, "faithful", "trace")
    store.transaction(lambda db: write_review(db, ReviewInput(key, "disagree", "ann"), 100.0))
    store.transaction(lambda db: write_review(db, ReviewInput(key, "agree", "bob", note="missed a claim"), 200.0))
    trail = store.transaction(lambda db: history(db, key))
    assert [(r.reviewer, r.agreement, r.superseded_at) for r in trail] == [
        ("bob", "agree", None),
        ("ann", "disagree", 200.0),
    ]
    assert [r.reviewer for r in store.transaction(lambda db: reviews_in_force(db, "faithful"))] == ["bob"]
    assert backend.scalar("SELECT count(*) FROM reviews") == 2
    store.close()


def test_a_result_the_store_does_not_hold_cannot_be_reviewed(backend: Backend) -> None:
    store = stored(backend)
    for key in (ResultKey(TRACE, "nope", "trace"), ResultKey("cd" * 16, "faithful", "trace"),
                ResultKey(TRACE, "json_valid", "llm", "other-span")):  # fmt: skip
        with pytest.raises(ResultNotFound):
            store.transaction(lambda db, key=key: write_review(db, ReviewInput(key, "agree", "ann"), 1.0))
    assert backend.scalar("SELECT count(*) FROM reviews") == 0
    store.close()


def test_reviews_outlive_their_traces_rows(backend: Backend) -> None:
    store = stored(backend)
    key = ResultKey(TRACE, "faithful", "trace")
    store.transaction(lambda db: write_review(db, ReviewInput(key, "agree", "ann"), 100.0))
    backend.execute("DELETE FROM results")
    backend.execute("DELETE FROM traces")
    [kept] = store.transaction(lambda db: reviews_in_force(db, since=50.0))
    assert kept.task is not None and kept.task["input"] == "where is my order?" and kept.verdict_passed is False
    assert store.transaction(lambda db: reviews_in_force(db, since=150.0)) == []
    store.close()


def test_reviews_written_through_the_daemon_side_are_read_by_the_reader(backend: Backend) -> None:
    """`ReviewWriter` writes off the event loop and tells its listener; a reader opened as the CLI opens one (another
    connection, as another replica would) reads them; an unknown result is NotFound."""
    store = stored(backend)
    heard: list[StoredReview] = []
    reviewing = ReviewWriter(store, heard.append, clock=lambda: 300.0)
    key = ResultKey(TRACE, "polite", "trace")
    written = asyncio.run(reviewing.review(ReviewInput(key, "disagree", "ann", corrected_label="rude")))
    assert heard == [written] and written.miss and written.created_at == 300.0
    with pytest.raises(NotFound):
        asyncio.run(reviewing.review(ReviewInput(ResultKey(TRACE, "nope", "trace"), "agree", "ann")))
    reader = backend.reader()
    try:
        [read] = reader.reviews_of_trace(TRACE)
        assert read == written and reader.reviews_in_force("polite") == [written]
        assert reader.review_history(key) == [written] and reader.reviews_in_force("faithful") == []
    finally:
        reader.close()
    store.close()


def test_without_a_store_reviews_are_unavailable() -> None:
    with pytest.raises(Unavailable):
        asyncio.run(ReviewWriter(None).review(ReviewInput(ResultKey(TRACE, "x", "trace"), "agree", "ann")))
